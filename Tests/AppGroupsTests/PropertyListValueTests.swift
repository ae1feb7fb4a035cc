import AppGroups
import Foundation
import Testing

@Suite("PropertyListValue")
struct PropertyListValueTests {
  @Test func boolAndIntStayDistinct() {
    #expect(PropertyListValue(true) == .bool(true))
    #expect(PropertyListValue(1) == .integer(1))
    #expect(PropertyListValue(1.5) == .real(1.5))
  }

  @Test func nonPropertyListValuesAreRefused() {
    struct Opaque {}
    #expect(PropertyListValue(Opaque()) == nil)
    #expect(PropertyListValue([Opaque()] as [Any]) == nil)
  }
}
