import AppGroups
import Foundation

/// `groupctl export DOMAIN PATH|- [--xml]`
struct ExportCommand: ParsableCommand {
  /// A path, or `-` for standard output.
  static let path = Argument.positional("PATH", shownAs: "PATH|-")
  static let xml = Argument.flag("--xml", help: "Write an XML property list instead.")

  static let configuration = CommandConfiguration(
    commandName: "export",
    abstract: "Write a domain's contents to a property-list file.",
    arguments: [Argument.domain, path, xml],
    discussion:
      """
      Writes the values stored in the domain's own file (as read DOMAIN prints \
      them) as a binary property list, as Apple writes them, or as XML with --xml; \
      - writes to standard output.
      """
  )

  let arguments: Arguments

  func run() throws {
    let path = arguments[Self.path]
    let resolved = try ResolvedDomain(domain, globals: globals)
    let values = try resolved.existingValues()
    if arguments[Self.xml], let (place, date) = Self.dateXMLCannotHold(in: .dictionary(values)) {
      throw CommandFailure(
        "cannot export \(domain) as XML: the date at \(place) (\(formatDate(date))) is beyond the"
          + " years an XML property list holds (about 300 million either side of year 1); export"
          + " it without --xml, as a binary property list, which holds it; nothing was written")
    }
    let data = try PropertyListValue.dictionary(values).propertyListData(
      format: arguments[Self.xml] ? .xml : .binary)
    if path == "-" {
      try writeOut(data)
      return
    }
    do {
      try Self.write(data, to: path)
    } catch let failure as CommandFailure {
      throw failure
    } catch {
      throw CommandFailure("cannot write \(path): \(describeFileError(error))")
    }
  }

  /// The place (`key.key[index]`) and value of the first date in `value`, in key order, that
  /// Foundation's XML writer does not write as itself: an infinite one (written as text no
  /// reader takes) or one more than 10^16 seconds from 1970 (past about year 2 billion it is
  /// written as another date, and before that its seconds drift).
  static func dateXMLCannotHold(
    in value: PropertyListValue, at place: String = ""
  ) -> (String, Date)? {
    switch value {
    case .date(let date) where !(date.timeIntervalSince1970.magnitude <= 1e16):
      return (place, date)
    case .dictionary(let entries):
      for key in entries.keys.sorted() {
        let inner = place.isEmpty ? key : "\(place).\(key)"
        if let entry = entries[key], let found = dateXMLCannotHold(in: entry, at: inner) {
          return found
        }
      }
    case .array(let items):
      for (index, item) in items.enumerated() {
        if let found = dateXMLCannotHold(in: item, at: "\(place)[\(index)]") { return found }
      }
    default: break
    }
    return nil
  }

  /// Writes `data` to `path` as the shell's `>` would land it, but atomically where it can: a
  /// new or regular file is replaced whole (through a symbolic link, the file it leads to, so
  /// that the link stays); a fifo, a socket or a device (`/dev/stdout`, a pipe) is written to
  /// as it is, never replaced by a file, and a write it refuses (`/dev/full`) fails. A link
  /// to nothing is refused, naming it and what it leads to: it is never replaced by a file,
  /// and the file it names is not created (the link may lead anywhere, and the kernel's guard
  /// of links in shared folders, which `>` has, would not apply to a path followed here).
  static func write(_ data: Data, to path: String) throws {
    guard let target = FileStatus(atPath: path, followingLinks: true) else {
      if FileStatus(atPath: path)?.kind == .symbolicLink {
        let destination = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? "?"
        throw CommandFailure(
          "cannot write \(path): it is a symbolic link to \(destination), which does not exist"
            + " (create that file first, or remove the link)")
      }
      // Nothing there yet: a new file.
      try data.write(to: URL(fileURLWithPath: path), options: .atomic)
      return
    }
    switch target.kind {
    case .regularFile:
      let url = URL(fileURLWithPath: path)
      let linked = FileStatus(atPath: path)?.kind == .symbolicLink
      try data.write(to: linked ? url.resolvingSymlinksInPath() : url, options: .atomic)
    case .folder:
      throw CommandFailure("cannot write \(path): it is a folder")
    case .fifo, .socket, .device, .symbolicLink:
      let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
      defer { try? handle.close() }
      try handle.write(contentsOf: data)
    }
  }
}
