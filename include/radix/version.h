#pragma once
/// Radix's version; it enters the key of every cache entry.
#define RADIX_VERSION "0.1.0"
