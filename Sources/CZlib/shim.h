// zlib, from Debian's zlib1g-dev: the browser test inflates Chromium's PNG screenshots with it.
#include <zlib.h>
