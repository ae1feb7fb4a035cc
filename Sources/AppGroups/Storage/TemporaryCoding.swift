public import Foundation

// Stand-in until the binary codec lands; replaced by PropertyListValue+Coding.swift.
public enum PropertyListFileFormat: Sendable { case binary, xml }

extension PropertyListValue {
  public init(propertyListData data: Data) throws(AppGroupsError) {
    guard !data.isEmpty else { throw AppGroupsError(.corruptPreferences, "the file is empty") }
    if let problem = PropertyListScreen.problem(with: data) {
      throw AppGroupsError(.corruptPreferences, problem)
    }
    let any: Any
    do {
      any = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
    } catch {
      throw AppGroupsError(.corruptPreferences, "not a property list")
    }
    guard let value = PropertyListValue(any) else {
      throw AppGroupsError(.corruptPreferences, "holds a value that is not a property-list value")
    }
    self = value
  }

  public func propertyListData(format: PropertyListFileFormat = .binary) throws(AppGroupsError) -> Data {
    do {
      return try PropertyListSerialization.data(
        fromPropertyList: foundationValue, format: format == .binary ? .binary : .xml, options: 0)
    } catch {
      throw AppGroupsError(.unsupportedValue, "cannot encode: \(error)")
    }
  }
}
