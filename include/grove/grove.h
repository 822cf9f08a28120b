// grove/grove.h — everything a Grove user includes.
#pragma once

#include "grove/dsl.h"
#include "grove/error.h"
#include "grove/matrix.h"
#include "grove/program.h"
#include "grove/types.h"
#include "grove/version.h"
