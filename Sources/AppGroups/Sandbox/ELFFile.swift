/// What the dynamic loader reads of an ELF file before it runs it: the interpreter it names,
/// the libraries it needs and where it says to look for them. Read from the file's bytes,
/// defensively: every offset and size is checked against the file, and a file that does not
/// hold up gets an ``ELFFile/Failure`` naming what is wrong, never a crash.
///
/// See: man 5 elf (the ELF header, program headers `PT_INTERP`, `PT_DYNAMIC` and `PT_LOAD`,
/// and the dynamic section's `DT_NEEDED`, `DT_STRTAB`, `DT_STRSZ`, `DT_RPATH`, `DT_RUNPATH`).
struct ELFFile: Sendable, Equatable {
  /// Why a file is not an ELF file the loader could use.
  struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
    var path: String
    var reason: String
    var description: String { "\(path) is not a well-formed ELF file: \(reason)" }
  }

  /// 64-bit (`ELFCLASS64`) rather than 32-bit.
  var is64Bit: Bool
  /// `e_machine`: the processor the file is for.
  var machine: UInt16
  /// `PT_INTERP`: the program that loads it (`/lib64/ld-linux-x86-64.so.2`), for a dynamically
  /// linked executable.
  var interpreter: String?
  /// `DT_NEEDED`, in order.
  var needed: [String] = []
  /// `DT_RPATH`, split at `:`; `nil` when absent.
  var rpath: [String]?
  /// `DT_RUNPATH`, split at `:`; `nil` when absent.
  var runpath: [String]?

  /// The first four bytes of every ELF file.
  static let magic: [UInt8] = [0x7f, 0x45, 0x4c, 0x46]

  /// Bounds that no real file reaches; past them the file is refused rather than read.
  static let maximumProgramHeaders = 4096
  static let maximumDynamicEntries = 65_536
  static let maximumStringTable = 64 << 20

  /// Reads the ELF file at `path`.
  ///
  /// - Throws: ``Failure`` when it cannot be opened or read, or does not hold up.
  init(path: String) throws(Failure) {
    let opened: OpenFile?
    do {
      opened = try OpenFile(existing: path, for: .reading, followingLinks: true)
    } catch {
      throw Failure(path: path, reason: "cannot open it: \(error.code)")
    }
    guard let file = opened else {
      throw Failure(path: path, reason: "cannot open it: \(Errno.noSuchFileOrDirectory)")
    }
    guard let status = try? file.status(), status.isRegularFile else {
      throw Failure(path: path, reason: "not a regular file")
    }
    try self.init(path: path, size: UInt64(status.size)) { offset, count in
      guard let bytes = try? file.read(at: Int(offset), count: count), bytes.count == count else {
        return nil
      }
      return bytes
    }
  }

  /// Reads an ELF file of `size` bytes through `read(offset, count)`, which returns exactly
  /// `count` bytes or `nil`. `path` only names the file in a failure.
  init(
    path: String, size: UInt64, read: (UInt64, Int) -> [UInt8]?
  ) throws(Failure) {
    func fail(_ reason: String) -> Failure { Failure(path: path, reason: reason) }
    func bytes(_ offset: UInt64, _ count: Int, _ what: String) throws(Failure) -> [UInt8] {
      guard count >= 0, offset <= size, UInt64(count) <= size - offset else {
        throw fail("\(what) (\(count) bytes at offset \(offset)) lies past the end of the file (\(size) bytes)")
      }
      guard let data = read(offset, count), data.count == count else {
        throw fail("cannot read \(what) at offset \(offset)")
      }
      return data
    }

    guard size >= 4, try bytes(0, 4, "the magic number") == Self.magic else {
      throw fail("no ELF magic number")
    }
    let identification = try bytes(0, 16, "the identification")
    switch identification[4] {
    case 1: is64Bit = false
    case 2: is64Bit = true
    default: throw fail("unknown class \(identification[4])")
    }
    let little: Bool
    switch identification[5] {
    case 1: little = true
    case 2: little = false
    default: throw fail("unknown byte order \(identification[5])")
    }
    let wide = is64Bit
    func integer(_ data: [UInt8], _ at: Int, _ width: Int) -> UInt64 {
      var value: UInt64 = 0
      for index in 0..<width {
        let byte = UInt64(data[at + (little ? width - 1 - index : index)])
        value = value << 8 | byte
      }
      return value
    }
    func word(_ data: [UInt8], _ at: Int) -> UInt64 { integer(data, at, wide ? 8 : 4) }

    let header = try bytes(0, wide ? 64 : 52, "the ELF header")
    machine = UInt16(integer(header, 18, 2))
    let programHeaderOffset = word(header, wide ? 32 : 28)
    let entrySize = Int(integer(header, wide ? 54 : 42, 2))
    let entryCount = Int(integer(header, wide ? 56 : 44, 2))
    let minimumEntrySize = wide ? 56 : 32
    guard entryCount == 0 || entrySize >= minimumEntrySize else {
      throw fail("program headers of \(entrySize) bytes, fewer than \(minimumEntrySize)")
    }
    guard entryCount < 0xffff, entryCount <= Self.maximumProgramHeaders else {
      throw fail("\(entryCount) program headers")
    }

    struct Segment {
      var type: UInt32
      var offset: UInt64
      var address: UInt64
      var fileSize: UInt64
    }
    let table = try bytes(programHeaderOffset, entrySize * entryCount, "the program headers")
    var segments: [Segment] = []
    for index in 0..<entryCount {
      let base = index * entrySize
      segments.append(
        Segment(
          type: UInt32(integer(table, base, 4)),
          offset: word(table, base + (wide ? 8 : 4)),
          address: word(table, base + (wide ? 16 : 8)),
          fileSize: word(table, base + (wide ? 32 : 16))))
    }

    func text(_ data: ArraySlice<UInt8>) -> String {
      String(decoding: data.prefix { $0 != 0 }, as: UTF8.self)
    }

    // PT_INTERP = 3
    if let segment = segments.first(where: { $0.type == 3 }) {
      guard segment.fileSize > 0, segment.fileSize <= 4096 else {
        throw fail("an interpreter path of \(segment.fileSize) bytes")
      }
      let data = try bytes(segment.offset, Int(segment.fileSize), "the interpreter path")
      guard data.last == 0 else { throw fail("the interpreter path does not end with a NUL") }
      interpreter = text(data[...])
    }

    // PT_DYNAMIC = 2
    guard let dynamic = segments.first(where: { $0.type == 2 }) else { return }
    let dynamicEntrySize = wide ? 16 : 8
    guard dynamic.fileSize / UInt64(dynamicEntrySize) <= UInt64(Self.maximumDynamicEntries) else {
      throw fail("a dynamic section of \(dynamic.fileSize) bytes")
    }
    let entries = try bytes(
      dynamic.offset, Int(dynamic.fileSize) / dynamicEntrySize * dynamicEntrySize,
      "the dynamic section")
    var neededOffsets: [UInt64] = []
    var rpathOffset: UInt64?
    var runpathOffset: UInt64?
    var tableAddress: UInt64?
    var tableSize: UInt64?
    var at = 0
    while at + dynamicEntrySize <= entries.count {
      let tag = integer(entries, at, wide ? 8 : 4)
      let value = word(entries, at + (wide ? 8 : 4))
      at += dynamicEntrySize
      switch tag {
      case 0: at = entries.count  // DT_NULL
      case 1: neededOffsets.append(value)  // DT_NEEDED
      case 5: tableAddress = value  // DT_STRTAB
      case 10: tableSize = value  // DT_STRSZ
      case 15: rpathOffset = value  // DT_RPATH
      case 29: runpathOffset = value  // DT_RUNPATH
      default: break
      }
    }
    guard !neededOffsets.isEmpty || rpathOffset != nil || runpathOffset != nil else { return }
    guard let tableAddress, let tableSize else {
      throw fail("a dynamic section with names but no string table (DT_STRTAB, DT_STRSZ)")
    }
    guard tableSize <= UInt64(Self.maximumStringTable) else {
      throw fail("a string table of \(tableSize) bytes")
    }
    // DT_STRTAB is an address: the PT_LOAD segment (type 1) that maps it says where it is.
    guard
      let load = segments.first(where: {
        $0.type == 1 && tableAddress >= $0.address && tableAddress - $0.address < $0.fileSize
      })
    else {
      throw fail("the string table's address \(tableAddress) is in no loaded segment")
    }
    let strings = try bytes(
      load.offset &+ (tableAddress - load.address), Int(tableSize), "the string table")
    func string(_ offset: UInt64, _ what: String) throws(Failure) -> String {
      guard offset < UInt64(strings.count) else {
        throw fail("\(what) at \(offset) lies outside the string table (\(strings.count) bytes)")
      }
      guard strings[Int(offset)...].contains(0) else {
        throw fail("\(what) at \(offset) does not end with a NUL")
      }
      return text(strings[Int(offset)...])
    }
    for offset in neededOffsets { needed.append(try string(offset, "a DT_NEEDED name")) }
    if let rpathOffset {
      rpath = try string(rpathOffset, "DT_RPATH").split(separator: ":").map(String.init)
    }
    if let runpathOffset {
      runpath = try string(runpathOffset, "DT_RUNPATH").split(separator: ":").map(String.init)
    }
  }
}
