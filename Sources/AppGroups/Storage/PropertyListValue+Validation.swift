import Foundation

extension PropertyListValue {
  /// Why this value cannot be stored, or `nil` when it can: the reader
  /// refuses dates that are not a number and nesting deeper than
  /// ``BinaryPropertyList/maximumDepth``, so the writer must never produce them.
  func storageProblem() -> String? {
    switch self {
    case .string, .integer, .real, .bool, .data: return nil
    case .date(let date): return date.timeIntervalSinceReferenceDate.isNaN ? "it holds a date that is not a number (NaN)" : nil
    case .array, .dictionary: break
    }
    var stack: [(PropertyListValue, Int)] = [(self, 1)]
    while let (value, depth) = stack.popLast() {
      if depth > BinaryPropertyList.maximumDepth {
        return "it is nested deeper than \(BinaryPropertyList.maximumDepth) levels"
      }
      switch value {
      case .date(let date) where date.timeIntervalSinceReferenceDate.isNaN:
        return "it holds a date that is not a number (NaN)"
      case .array(let elements):
        for element in elements { stack.append((element, depth + 1)) }
      case .dictionary(let entries):
        for element in entries.values { stack.append((element, depth + 1)) }
      default:
        break
      }
    }
    return nil
  }
}
