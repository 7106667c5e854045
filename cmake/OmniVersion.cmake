# The build's identity, for every binary's --version (src/common/core/build_info.hpp.in).
#
# OMNI_GIT_COMMIT is the commit the source tree was at when CMake configured it: empty when git
# or .git is missing (a release tarball), so such a build still configures and reports the
# project version alone. Builds do not ask git again; re-run CMake to refresh it. A packager who
# knows the commit of a tarball passes -DOMNI_GIT_COMMIT=<sha>.
if(NOT DEFINED OMNI_GIT_COMMIT)
  set(OMNI_GIT_COMMIT "")
  find_package(Git QUIET)
  if(GIT_FOUND AND EXISTS "${PROJECT_SOURCE_DIR}/.git")
    execute_process(
      COMMAND "${GIT_EXECUTABLE}" rev-parse --short=12 HEAD
      WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
      RESULT_VARIABLE omni_git_result
      OUTPUT_VARIABLE omni_git_output
      OUTPUT_STRIP_TRAILING_WHITESPACE
      ERROR_QUIET)
    if(omni_git_result EQUAL 0)
      set(OMNI_GIT_COMMIT "${omni_git_output}")
    endif()
  endif()
endif()
if(OMNI_GIT_COMMIT)
  message(STATUS "Omni ${PROJECT_VERSION}, commit ${OMNI_GIT_COMMIT}")
else()
  message(STATUS "Omni ${PROJECT_VERSION}, no git commit (not a git checkout)")
endif()
