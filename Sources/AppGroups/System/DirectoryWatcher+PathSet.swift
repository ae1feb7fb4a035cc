extension WatcherEngine {
  /// A few paths, each once: a list searched in order, not a `Set<String>`, whose storage type
  /// a new process would instantiate (~19 k instructions) when it watches its first folder; a
  /// kernel watch carries a path or two. Iterated in the order the paths were added (a set's
  /// order is its hashing's, which differs from process to process: nothing relies on it).
  struct PathSet: Sequence {
    private var paths: [String] = []

    var isEmpty: Bool { paths.isEmpty }
    var count: Int { paths.count }
    var first: String? { paths.first }

    mutating func insert(_ path: String) {
      if !paths.contains(path) { paths.append(path) }
    }

    mutating func remove(_ path: String) {
      if let index = paths.firstIndex(of: path) { paths.remove(at: index) }
    }

    func union(_ other: PathSet) -> PathSet {
      var union = self
      for path in other.paths { union.insert(path) }
      return union
    }

    func makeIterator() -> IndexingIterator<[String]> { paths.makeIterator() }
  }
}
