// libsecret's client API (and through it GLib's).
#include <libsecret/secret.h>
