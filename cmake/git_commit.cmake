# git_commit.cmake: run at every build (cmake -P, target api_commit) to
# write api_commit.h with the source tree's git commit (and "-dirty" when
# it has uncommitted changes), rewritten only when that changes, so
# `superopt --version` names the commit it was built from.
# Inputs: SRC (source dir), OUT (header path), GIT (git executable or "").
set(commit unknown)
if(GIT)
  execute_process(COMMAND ${GIT} rev-parse --short=12 HEAD
                  WORKING_DIRECTORY ${SRC} OUTPUT_VARIABLE out
                  RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET)
  if(rc EQUAL 0)
    set(commit ${out})
    execute_process(COMMAND ${GIT} diff --quiet HEAD --
                    WORKING_DIRECTORY ${SRC} RESULT_VARIABLE dirty
                    ERROR_QUIET)
    if(NOT dirty EQUAL 0)
      string(APPEND commit "-dirty")
    endif()
  endif()
endif()
set(text "/* api_commit.h: written at build time by cmake/git_commit.cmake. */\n#define SUPEROPT_GIT_COMMIT \"${commit}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
