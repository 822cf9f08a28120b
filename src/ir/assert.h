// src/ir/assert.h — internal invariants; they live with the runtime, which
// checks its own (runtime/core/assert.h).
#pragma once

#include "runtime/core/assert.h"
