// libdconf's client API (and through it GLib's GVariant and main loop).
#include <dconf.h>
