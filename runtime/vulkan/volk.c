/* runtime/vulkan/volk.c — the copy of volk inside Grove: Debian's volk.c
 * (libvulkan-volk-dev), compiled here with every global and function renamed
 * by grove_volk_names.h (made by runtime/CMakeLists.txt from volk.h), so an
 * application that links libvulkan or compiles its own volk meets none of
 * Grove's symbols. Only vk_api.cpp calls it, under its lock. */
#include "grove_volk_names.h"

#include <volk.c>
