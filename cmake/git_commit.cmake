cmake_minimum_required(VERSION 3.25)
# Writes OUTPUT (core/git_commit.hpp) with the commit of SOURCE_DIR at build time, not configure time: a
# rebuild after a new commit reports that commit in every report's tool.git_commit. configure_file leaves
# the file untouched when the commit is the same, so nothing recompiles then.
set(FB_GIT_COMMIT "unknown")
if(GIT_EXECUTABLE)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND commit)
    set(FB_GIT_COMMIT "${commit}")
  endif()
endif()
file(WRITE ${OUTPUT}.in "#pragma once\n// Generated at build time by cmake/git_commit.cmake.\nnamespace fb::build {\ninline constexpr const char* kGitCommit = \"@FB_GIT_COMMIT@\";\n}  // namespace fb::build\n")
configure_file(${OUTPUT}.in ${OUTPUT} @ONLY)
