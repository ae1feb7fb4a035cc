import AppGroups
import CSQLite
import Foundation

/// A SQLite error: the call, the database's path and SQLite's own message.
struct DatabaseError: Error, CustomStringConvertible {
  let description: String
}

/// One connection to the notes database, through the system's libsqlite3: the few calls the
/// example needs, each failure a ``DatabaseError`` that says what SQLite said.
final class Database {
  let path: String
  private var handle: OpaquePointer?

  /// Opens (creating) the database at `path` in WAL mode, with its table, waiting up to five
  /// seconds for another connection's lock (`sqlite3_busy_timeout`) before a call fails with
  /// "database is locked".
  ///
  /// Refused before the device's first unlock (see ``protectionClass``): the app checks, the
  /// library does not, since libsqlite3 and not the library reads and writes these files.
  ///
  /// A symbolic link at `path` is refused (`SQLITE_OPEN_NOFOLLOW`): any app of the group can
  /// plant one in the group container, and a link (dangling, so the coordinator sees a path
  /// inside the container) would have this app create or write its notes wherever the link
  /// points, its own private container included.
  init(path: String) throws {
    self.path = path
    if let reason = DeviceState.current().unavailabilityReason(for: Self.protectionClass) {
      throw DatabaseError(description: "cannot open \(path): \(reason)")
    }
    var opened: OpaquePointer?
    let code = sqlite3_open_v2(
      path, &opened, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW, nil)
    handle = opened
    guard code == SQLITE_OK else {
      // SQLITE_CANTOPEN_SYMLINK, a macro Swift does not import: SQLITE_CANTOPEN | (6 << 8).
      let symbolicLink = opened.map { sqlite3_extended_errcode($0) == SQLITE_CANTOPEN | (6 << 8) } ?? false
      let message =
        symbolicLink
        ? "it is a symbolic link, and the notes are kept in a regular file of the group container;"
          + " nothing was read or written through it"
        : opened.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
      sqlite3_close(opened)
      handle = nil
      throw DatabaseError(description: "cannot open \(path): \(message)")
    }
    sqlite3_busy_timeout(handle, 5000)
    try execute("PRAGMA journal_mode=WAL")
    try execute(
      "CREATE TABLE IF NOT EXISTS notes(id INTEGER PRIMARY KEY AUTOINCREMENT, text TEXT NOT NULL,"
        + " created REAL NOT NULL)")
    // The database's generation, chosen once when it is made: a database deleted and made
    // again starts its ids at 1, and a reader that remembers the last id it saw tells the two
    // apart by this, not by the file (a new file may get the old one's inode number). Written
    // only when missing: a reader that finds it does not take SQLite's write lock.
    try execute("CREATE TABLE IF NOT EXISTS generation(value INTEGER NOT NULL)")
    if try generation() == nil {
      try execute(
        "INSERT INTO generation(value) SELECT random() WHERE NOT EXISTS (SELECT 1 FROM generation)")
    }
  }

  /// The database's generation (see ``init(path:)``); `nil` before it is written.
  func generation() throws -> Int64? {
    try withStatement("SELECT value FROM generation ORDER BY rowid LIMIT 1", "a query") { statement in
      switch sqlite3_step(statement) {
      case SQLITE_ROW: return sqlite3_column_int64(statement, 0)
      case SQLITE_DONE: return nil
      default: throw failure("reading the generation")
      }
    }
  }

  /// The database file's identity: its device and inode numbers. A file put in its place (a
  /// backup renamed over it) is another file; one copied into it (`cp` writes the same inode)
  /// is not, and neither is a new file given the old one's number: those the widget tells by
  /// the presenter's deletion callback, the generation, or ids going back.
  struct FileIdentity: Equatable {
    let device: UInt64
    let inode: UInt64
  }

  /// The identity of the file at ``path`` (see ``FileIdentity``).
  func fileIdentity() throws -> FileIdentity {
    var status = stat()
    // See: man 2 stat
    guard stat(path, &status) == 0 else {
      throw DatabaseError(description: "cannot look at \(path): \(String(cString: strerror(errno)))")
    }
    return FileIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
  }

  /// The protection class the database is kept under, iOS's default for an app's files: its
  /// data is there from the first unlock after a restart on, also while the device is locked.
  /// The simulator enforces protection classes only where the library does the I/O (the
  /// suites, `FileProtection`); a plain file written through libsqlite3 is not guarded, so
  /// this example checks the device's state (``DeviceState/unavailabilityReason(for:)``)
  /// itself before each open.
  static let protectionClass = ProtectionClass.completeUntilFirstUserAuthentication

  deinit { close() }

  /// Closes the connection: every lock SQLite holds on the database's files goes with it.
  func close() {
    guard let handle else { return }
    sqlite3_close_v2(handle)
    self.handle = nil
  }

  private func failure(_ what: String) -> DatabaseError {
    let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "closed"
    return DatabaseError(description: "\(what) on \(path): \(message)")
  }

  /// Runs SQL that returns no rows.
  func execute(_ sql: String) throws {
    guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else { throw failure(sql) }
  }

  /// Runs `body` with `sql` prepared as a statement, finalised after it; a statement that
  /// cannot be prepared fails as "preparing `what`".
  private func withStatement<T>(_ sql: String, _ what: String, _ body: (OpaquePointer?) throws -> T) throws -> T {
    var statement: OpaquePointer?
    guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else {
      throw failure("preparing \(what)")
    }
    defer { sqlite3_finalize(statement) }
    return try body(statement)
  }

  /// Inserts a note; its id.
  func insert(_ text: String) throws -> Int64 {
    try withStatement("INSERT INTO notes(text, created) VALUES(?, ?)", "an insert") { statement in
      sqlite3_bind_text(statement, 1, text, -1, csqlite_transient())
      sqlite3_bind_double(statement, 2, Date().timeIntervalSince1970)
      guard sqlite3_step(statement) == SQLITE_DONE else { throw failure("inserting a note") }
      return sqlite3_last_insert_rowid(handle)
    }
  }

  /// The highest id of a note (0 when there is none).
  func lastID() throws -> Int64 {
    try withStatement("SELECT coalesce(max(id), 0) FROM notes", "a query") { statement in
      guard sqlite3_step(statement) == SQLITE_ROW else { throw failure("reading the last id") }
      return sqlite3_column_int64(statement, 0)
    }
  }

  /// The notes after `id`, in order.
  func notes(after id: Int64 = 0) throws -> [(id: Int64, text: String)] {
    try withStatement("SELECT id, text FROM notes WHERE id > ? ORDER BY id", "a query") { statement in
      sqlite3_bind_int64(statement, 1, id)
      var rows: [(Int64, String)] = []
      while true {
        switch sqlite3_step(statement) {
        case SQLITE_ROW:
          let text = sqlite3_column_text(statement, 1).map { String(cString: $0) } ?? ""
          rows.append((sqlite3_column_int64(statement, 0), text))
        case SQLITE_DONE:
          return rows
        default:
          throw failure("reading the notes")
        }
      }
    }
  }
}
