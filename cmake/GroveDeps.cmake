# GroveDeps.cmake — how Grove's libraries link their third-party libraries.
#
# Grove's libraries are static, and a static library's private dependencies
# still reach whoever links it. In the build tree they are the packages' own
# targets (LLVM, lldELF, SPIRV-Tools-static, TBB::tbb...). Installed, they are
# Grove::dep_<name>: imported targets of exactly the files Grove was built
# with, which GroveConfig.cmake defines itself. So find_package(Grove) loads
# no LLVM, lld, SPIRV-Tools or oneTBB CMake package (LLVM's breaks a C++-only
# project when libedit-dev is installed, and leaks a private dependency).

# Links `target` privately to each package target named after it, and
# describes those (here, where their packages' imported targets are visible)
# for the installed package.
function(grove_link_private target)
  foreach(dep IN LISTS ARGN)
    string(REPLACE "::" "_" installed "${dep}")
    target_link_libraries(${target} PRIVATE $<BUILD_INTERFACE:${dep}> $<INSTALL_INTERFACE:Grove::dep_${installed}>)
    _grove_describe(${dep})
  endforeach()
endfunction()

# The file an imported target stands for (its build type's, else any).
function(_grove_imported_file out target)
  set(file "")
  get_target_property(configs ${target} IMPORTED_CONFIGURATIONS)
  if(NOT configs)
    set(configs "")
  endif()
  string(TOUPPER "${CMAKE_BUILD_TYPE}" build_type)
  foreach(config IN ITEMS ${build_type} ${configs} RELEASE RELWITHDEBINFO NOCONFIG DEBUG)
    get_target_property(f ${target} IMPORTED_LOCATION_${config})
    if(f)
      set(file "${f}")
      break()
    endif()
  endforeach()
  if(NOT file)
    get_target_property(f ${target} IMPORTED_LOCATION)
    if(f)
      set(file "${f}")
    endif()
  endif()
  set(${out} "${file}" PARENT_SCOPE)
endfunction()

# Appends to the global property GROVE_PRIVATE_DEP_CODE the CMake code
# that defines Grove::dep_<name> for `dep` and for what it links in turn.
function(_grove_describe dep)
  set(todo ${dep})
  while(todo)
    list(POP_FRONT todo dep)
    get_property(done GLOBAL PROPERTY GROVE_PRIVATE_DEPS)
    if(dep IN_LIST done)
      continue()
    endif()
    set_property(GLOBAL APPEND PROPERTY GROVE_PRIVATE_DEPS ${dep})
    string(REPLACE "::" "_" name "${dep}")
    set(name "Grove::dep_${name}")
    set(links "")
    get_target_property(interface ${dep} INTERFACE_LINK_LIBRARIES)
    if(interface)
      foreach(item IN LISTS interface)
        if(item MATCHES "^\\$<LINK_ONLY:(.*)>$")
          set(item "${CMAKE_MATCH_1}")
        endif()
        if(TARGET ${item})
          list(APPEND todo ${item})
          string(REPLACE "::" "_" linked "${item}")
          list(APPEND links "Grove::dep_${linked}")
        elseif(item MATCHES "^\\$<")
          message(FATAL_ERROR "${dep} links '${item}', which the installed Grove package cannot describe")
        else()
          list(APPEND links "${item}")
        endif()
      endforeach()
    endif()
    get_target_property(type ${dep} TYPE)
    set(code "if(NOT TARGET ${name})\n")
    if(type STREQUAL "INTERFACE_LIBRARY")
      string(APPEND code "  add_library(${name} INTERFACE IMPORTED)\n")
    else()
      _grove_imported_file(file ${dep})
      if(NOT file)
        message(FATAL_ERROR "Grove's dependency ${dep} names no library file")
      endif()
      # Shared libraries stay SHARED, so that a consumer's programs get the
      # run path of one outside the linker's default directories (libLLVM);
      # the linker takes the soname from the file.
      set(kind UNKNOWN)
      if(type STREQUAL "SHARED_LIBRARY")
        set(kind SHARED)
      elseif(type STREQUAL "STATIC_LIBRARY")
        set(kind STATIC)
      endif()
      string(APPEND code "  add_library(${name} ${kind} IMPORTED)\n"
                         "  set_target_properties(${name} PROPERTIES IMPORTED_LOCATION \"${file}\")\n")

    endif()
    if(links)
      string(APPEND code "  set_target_properties(${name} PROPERTIES INTERFACE_LINK_LIBRARIES \"${links}\")\n")
    endif()
    string(APPEND code "endif()\n")
    set_property(GLOBAL APPEND_STRING PROPERTY GROVE_PRIVATE_DEP_CODE "${code}")
  endwhile()
endfunction()

# The CMake code defining every dependency described so far.
function(grove_describe_private_deps out)
  get_property(code GLOBAL PROPERTY GROVE_PRIVATE_DEP_CODE)
  set(${out} "${code}" PARENT_SCOPE)
endfunction()
