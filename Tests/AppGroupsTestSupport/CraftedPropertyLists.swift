public import Foundation

/// Binary property lists built byte by byte, for files no encoder would write: nesting far
/// past any parser's limit, lengths and counts that claim more bytes than there are, cycles.
public enum CraftedPropertyList {
  /// A `bplist00` file from encoded objects (object 0 is the top), with 8-byte offsets and
  /// `referenceSize`-byte object references; `trailer` may override the trailer's fields.
  public static func file(
    objects: [[UInt8]], referenceSize: Int, objectCount: UInt64? = nil, top: UInt64 = 0,
    offsetTableOffset: UInt64? = nil
  ) -> Data {
    var out = Array("bplist00".utf8)
    var offsets: [Int] = []
    for object in objects {
      offsets.append(out.count)
      out += object
    }
    let tableOffset = out.count
    for offset in offsets { out += bigEndian(UInt64(offset), size: 8) }
    out += [0, 0, 0, 0, 0, 0, 8, UInt8(referenceSize)]
    out += bigEndian(objectCount ?? UInt64(objects.count), size: 8)
    out += bigEndian(top, size: 8)
    out += bigEndian(offsetTableOffset ?? UInt64(tableOffset), size: 8)
    return Data(out)
  }

  public static func bigEndian(_ value: UInt64, size: Int) -> [UInt8] {
    (0..<size).reversed().map { UInt8(truncatingIfNeeded: value >> (UInt64($0) * 8)) }
  }

  /// A reference of `size` bytes.
  public static func reference(_ index: Int, size: Int) -> [UInt8] {
    bigEndian(UInt64(index), size: size)
  }

  /// An ASCII string object.
  public static func ascii(_ text: String) -> [UInt8] {
    let bytes = Array(text.utf8)
    if bytes.count < 15 { return [0x50 | UInt8(bytes.count)] + bytes }
    return [0x5F, 0x13] + bigEndian(UInt64(bytes.count), size: 8) + bytes
  }

  /// `{"k": [[[ … ]]]}` with `depth` nested arrays.
  public static func nested(depth: Int) -> Data {
    let size = depth + 3 > 65_535 ? 4 : 2
    var objects: [[UInt8]] = []
    // 0: the dictionary {1: 2}; 1: "k"; 2…: arrays, each holding the next; last: empty array.
    objects.append([0xD1] + reference(1, size: size) + reference(2, size: size))
    objects.append(ascii("k"))
    for level in 0..<depth {
      objects.append([0xA1] + reference(2 + level + 1, size: size))
    }
    objects.append([0xA0])
    return file(objects: objects, referenceSize: size)
  }

  /// `{"k": <object>}` where the value object is given raw.
  public static func dictionary(withRawValue value: [UInt8]) -> Data {
    file(objects: [[0xD1, 1, 2], ascii("k"), value], referenceSize: 1)
  }

  /// `{"k": <object 2>}` followed by `objects` (the first is object 2, the value).
  public static func dictionary(withObjects objects: [[UInt8]]) -> Data {
    file(objects: [[0xD1, 1, 2], ascii("k")] + objects, referenceSize: 1)
  }

  /// An object marker whose length, in the following integer, is `length`.
  public static func withHugeLength(marker: UInt8, length: UInt64) -> [UInt8] {
    [marker | 0x0F, 0x13] + bigEndian(length, size: 8)
  }

  /// `{"k": [self]}`: an array that holds itself.
  public static var cycle: Data {
    file(objects: [[0xD1, 1, 2], ascii("k"), [0xA1, 2]], referenceSize: 1)
  }

  /// `{1: "v"}`: a dictionary keyed by an integer, which a preferences file cannot hold.
  public static var integerKey: Data {
    file(objects: [[0xD1, 1, 2], [0x10, 7], ascii("v")], referenceSize: 1)
  }
}
