// ExampleSchema: the keys the example app and its widget share, declared once, and the
// schema both register at launch.
//
// Version 1 of the app stored the unread count under "unread"; version 2 calls it
// "unreadCount". Whichever process launches first after an upgrade migrates the group
// suite, once: the rename and the schema marker land in one commit under the suite's lock,
// and the library reports it on stderr ("appgroups: schema: event=migrated … from=1 to=2").
public import AppGroups

/// The widget's colour scheme.
public enum Theme: String, Sendable, CaseIterable {
  case light, dark, system
}

extension PreferenceKeys {
  public static let unreadCount = PreferenceKey<Int>("unreadCount", default: 0, range: 0...99_999)
  public static let theme = PreferenceKey<Theme>("theme", default: .system)
  public static let greeting = PreferenceKey<String>("greeting", default: "hi")
  public static let readItems = PreferenceKey<[String]>("readItems", default: [])
}

public enum ExampleSchema {
  /// The group both processes share.
  public static let group = "group.com.example.shared"

  /// Version 2: "unread" (version 1) became "unreadCount".
  public static let schema = PreferenceSchema(
    version: 2,
    keys: [
      PreferenceKeys.unreadCount, PreferenceKeys.theme, PreferenceKeys.greeting,
      PreferenceKeys.readItems,
    ],
    migrations: [
      Migration(to: 2, [.rename("unread", to: PreferenceKeys.unreadCount)])
    ])
}
