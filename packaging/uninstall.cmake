# make uninstall: removes every file the last `cmake --install` wrote, then the folders
# that install created, each only if it is empty by then.
#   MANIFEST   install_manifest.txt: CMake's list of the files, under the prefix
#   DIRS       install_dirs.txt (default: beside MANIFEST): the folders that did not exist
#              before (packaging/install_dirs.cmake)
# Neither records DESTDIR: it is taken from the environment, as at install time. A folder
# that existed before the install (bin/, share/man/man1/ ...) is never removed, and
# neither is one that still holds something the install did not write.
if(NOT EXISTS "${MANIFEST}")
  message(FATAL_ERROR "uninstall: ${MANIFEST} not found: nothing was installed from this build")
endif()
if(NOT DIRS)
  get_filename_component(DIRS "${MANIFEST}" DIRECTORY)
  set(DIRS "${DIRS}/install_dirs.txt")
endif()
set(destdir "$ENV{DESTDIR}")
file(STRINGS "${MANIFEST}" files)
foreach(f ${files})
  set(f "${destdir}${f}")
  if(IS_SYMLINK "${f}" OR EXISTS "${f}")
    message(STATUS "Removing ${f}")
    file(REMOVE "${f}")
  else()
    message(STATUS "Already gone: ${f}")
  endif()
endforeach()
set(dirs)
if(EXISTS "${DIRS}")
  file(STRINGS "${DIRS}" dirs)
endif()
# Deepest first, so that a folder is empty when its parent is looked at.
list(SORT dirs)
list(REVERSE dirs)
foreach(d ${dirs})
  set(d "${destdir}${d}")
  if(IS_DIRECTORY "${d}")
    file(GLOB left "${d}/*" "${d}/.*")
    if(left)
      message(STATUS "Keeping ${d}: it holds files this install did not write")
    else()
      message(STATUS "Removing ${d}/")
      file(REMOVE "${d}")
      if(IS_DIRECTORY "${d}") # file(REMOVE) leaves folders: an empty one goes this way
        file(REMOVE_RECURSE "${d}")
      endif()
    endif()
  endif()
endforeach()
file(REMOVE "${MANIFEST}" "${DIRS}")
