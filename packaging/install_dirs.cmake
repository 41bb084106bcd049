# Runs first at install time (an install(CODE) rule): records which of the folders the
# install is about to write into do not exist yet, so that make uninstall can remove the
# folders this install created, and only those. TS_DIRS are relative to the prefix; each
# one's parents up to the DESTDIR (or /) count too. The list goes to install_dirs.txt in
# the build folder, without DESTDIR, like CMake's install_manifest.txt beside it.
set(destdir "$ENV{DESTDIR}")
set(created)
foreach(rel ${TS_DIRS})
  set(d "${CMAKE_INSTALL_PREFIX}/${rel}")
  while(NOT d STREQUAL "/" AND NOT d STREQUAL "")
    if(NOT IS_DIRECTORY "${destdir}${d}")
      list(APPEND created "${d}")
    endif()
    get_filename_component(d "${d}" DIRECTORY)
  endwhile()
endforeach()
list(REMOVE_DUPLICATES created)
set(record "${TS_BINARY_DIR}/install_dirs.txt")
set(old)
if(EXISTS "${record}")
  file(STRINGS "${record}" old) # an install over an earlier one keeps its record
endif()
list(APPEND old ${created})
list(REMOVE_DUPLICATES old)
string(REPLACE ";" "\n" text "${old}")
file(WRITE "${record}" "${text}\n")
