import AppGroupsTestSupport
import Foundation
import Glibc
import Testing

@testable import AppGroups

/// The file-type bits the library reads from `st_mode` as literals, and its status calls made
/// as `fstatat(2)`: the C library's own values and calls.
@Suite("File types and status calls")
struct FileModeTests {
  @Test func theFileTypeLiteralsAreTheCLibrarysOwn() {
    #expect(FileMode.typeMask == S_IFMT)
    #expect(FileMode.regular == S_IFREG)
    #expect(FileMode.folder == S_IFDIR)
    #expect(FileMode.symbolicLink == S_IFLNK)
    #expect(FileMode.fifo == S_IFIFO)
    #expect(FileMode.socket == S_IFSOCK)
  }

  @Test func theStatusCallsAreLstatStatAndFstat() throws {
    let sandbox = try Sandbox()
    let file = sandbox.path + "/file", link = sandbox.path + "/link"
    #expect(FileManager.default.createFile(atPath: file, contents: Data("12345".utf8)))
    #expect(symlink(file, link) == 0)

    var ofLink = stat(), followed = stat(), opened = stat()
    #expect(Status.link(link, &ofLink) == 0)
    #expect(ofLink.fileType == FileMode.symbolicLink)
    #expect(Status.following(link, &followed) == 0)
    #expect(followed.fileType == FileMode.regular)
    #expect(followed.st_size == 5)
    #expect(ofLink.st_ino != followed.st_ino)

    let fd = open(file, O_RDONLY | O_CLOEXEC)
    #expect(fd >= 0)
    defer { close(fd) }
    #expect(Status.open(fd, &opened) == 0)
    #expect(opened.st_ino == followed.st_ino)
    #expect(opened.st_size == 5)

    var missing = stat()
    #expect(Status.link(sandbox.path + "/missing", &missing) == -1)
    #expect(errno == ENOENT)
    #expect(Status.open(-1, &missing) == -1)
    #expect(errno == EBADF)
  }

  @Test func aFailedCallsErrnoIsTheOneItSet() throws {
    let sandbox = try Sandbox()
    func errnoOfOpening(_ path: String, _ flags: CInt) -> CInt? {
      do {
        let fd = try FileSystem.open(path, flags)
        close(fd)
        return nil
      } catch {
        return error.errno
      }
    }
    #expect(errnoOfOpening(sandbox.path + "/missing", O_RDONLY) == ENOENT)
    #expect(errnoOfOpening(sandbox.path, O_WRONLY) == EISDIR)
    #expect(errnoOfOpening(sandbox.path + "/missing/below", O_RDONLY) == ENOENT)
    #expect(FileManager.default.createFile(atPath: sandbox.path + "/file", contents: Data()))
    #expect(errnoOfOpening(sandbox.path + "/file/below", O_RDONLY) == ENOTDIR)
  }
}
