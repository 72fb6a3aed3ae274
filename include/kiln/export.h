// Symbol visibility. Kiln builds with -fvisibility=hidden; KILN_API marks the
// public surface of libkiln.
#pragma once

#if defined(_WIN32)
#define KILN_API __declspec(dllexport)
#else
#define KILN_API __attribute__((visibility("default")))
#endif
