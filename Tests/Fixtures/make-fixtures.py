#!/usr/bin/env python3
# Writes the suite files earlier versions of the "reader" app (Tests/AppGroupsTests/
# SchemaFixtureTests.swift) left behind, as binary property lists, the format Apple and
# AppGroups write. Run it from anywhere; it writes next to itself. The files are committed:
# regenerate only to change them on purpose.
#
#   v1.plist         version 1: no schema marker; "unread", "fontSize" as text, "legacyFlag"
#   v2.plist         version 2: marker 2; "columns" and "compact" (version 3 folds them into
#                    "layout"); a theme "sepia" and an unread count past the range
#   malformed.plist  no marker, and values of the wrong type under every key
import datetime
import os
import plistlib

here = os.path.dirname(os.path.abspath(__file__))

fixtures = {
    "v1.plist": {
        "unread": 7,
        "theme": "dark",
        "fontSize": "16",
        "legacyFlag": True,
        "tags": ["news", "sport"],
    },
    "v2.plist": {
        "AppGroupsSchemaVersion": 2,
        "unreadCount": 12000,
        "theme": "sepia",
        "fontSize": 20,
        "columns": 2,
        "compact": True,
        "lastSync": datetime.datetime(2024, 5, 1, 12, 0, 0),  # UTC (naive = UTC here),
    },
    "malformed.plist": {
        "unread": "many",
        "theme": 42,
        "fontSize": "huge",
        "legacyFlag": "yes",
        "tags": "news",
    },
}

for name, values in fixtures.items():
    with open(os.path.join(here, name), "wb") as f:
        plistlib.dump(values, f, fmt=plistlib.FMT_BINARY, sort_keys=True)
    print(f"wrote {name}")
