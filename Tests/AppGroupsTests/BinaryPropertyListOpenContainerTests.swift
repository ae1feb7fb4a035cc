@testable import AppGroups
import Foundation
import Testing

/// The reader's record of the containers being decoded, which it keeps without a table while
/// one container is open and with one from the second on: a cycle is refused, and a container
/// met again after it was closed is not one, however the first container's record was kept.
@Suite struct BinaryPropertyListOpenContainerTests {
  @Test func aCycleBackToTheTopAfterASiblingClosedIsRefused() throws {
    // [[1], [top]]: the first child opens and closes, then the second refers to the top.
    let objects: [[UInt8]] = [[0xA2, 0x01, 0x03], [0xA1, 0x02], [0x10, 0x01], [0xA1, 0x00]]
    let error = try #require(decodeError(handMade(objects)))
    #expect(error.message.contains("object 0 refers to itself"), "\(error)")
  }

  @Test func aContainerMetAgainOnceClosedIsNotACycle() throws {
    // {"a": [1], "b": [1]} with one shared array, and [x, x] nested one level down.
    let dictionary = handMade([[0xD2, 0x01, 0x02, 0x03, 0x03], [0x51, 0x61], [0x51, 0x62], [0xA1, 0x04], [0x10, 0x01]])
    #expect(
      try BinaryPropertyList.decode(dictionary)
        == .dictionary(["a": .array([.integer(1)]), "b": .array([.integer(1)])]))
    let nested = handMade([[0xA1, 0x01], [0xA2, 0x02, 0x02], [0xA0]])
    #expect(try BinaryPropertyList.decode(nested) == .array([.array([.array([]), .array([])])]))
  }

  @Test func salvagingRefusesOnlyTheValueThatRefersToTheTop() throws {
    // {"a": top, "b": 1}: the cycle costs its own key only.
    let data = handMade([[0xD2, 0x01, 0x02, 0x00, 0x03], [0x51, 0x61], [0x51, 0x62], [0x10, 0x01]])
    let salvage = try BinaryPropertyList.decodeSalvaging(data)
    #expect(salvage.values == ["b": .integer(1)])
    #expect(salvage.skipped.map(\.key) == ["a"])
    #expect(salvage.skipped.first?.reason.contains("refers to itself") == true)
  }
}
