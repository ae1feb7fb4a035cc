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

  @Test func numbersKeepTheirWidth() {
    #expect(PropertyListValue(Float(12.34)) == .float(12.34))
    #expect(PropertyListValue(Double(12.34)) == .real(12.34))
    #expect(PropertyListValue(CGFloat(0.5)) == .real(0.5))
    #expect(PropertyListValue(Float(1.5)) != PropertyListValue(1.5))
    #expect(PropertyListValue(UInt64.max) == .unsignedInteger(UInt64.max))
    #expect(PropertyListValue(UInt64(1) << 63) == .unsignedInteger(1 << 63))
    #expect(PropertyListValue(UInt64(5)) == .integer(5))
    #expect(PropertyListValue(UInt.max) == .unsignedInteger(UInt64(UInt.max)))
    #expect(PropertyListValue([Float(1), Float(2)] as [Any]) == .array([.float(1), .float(2)]))
    #expect(PropertyListValue(Float(2)).map(\.typeName) == "float")
    #expect(PropertyListValue(UInt64.max).map(\.typeName) == "integer")
    #expect(PropertyListValue.float(12.34).foundationValue as? Float == 12.34)
    #expect(PropertyListValue.unsignedInteger(UInt64.max).foundationValue as? UInt64 == UInt64.max)
  }

  @Test func nonPropertyListValuesAreRefused() {
    struct Opaque {}
    #expect(PropertyListValue(Opaque()) == nil)
    #expect(PropertyListValue([Opaque()] as [Any]) == nil)
  }
}
