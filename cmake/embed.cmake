# embed.cmake: run at build time (cmake -P) to write the text file IN as a
# C string constant NAME into the header OUT, so that a program carries a
# file kept once in the repository (experiment search's gnuplot script,
# scripts/plot-experiment.gp). Inputs: IN, OUT, NAME.
file(READ ${IN} text)
string(REPLACE "\\" "\\\\" text "${text}")
string(REPLACE "\"" "\\\"" text "${text}")
string(REPLACE "\n" "\\n\"\n    \"" text "${text}")
file(WRITE ${OUT} "/* written at build time from ${IN} by cmake/embed.cmake */\nstatic const char ${NAME}[] =\n    \"${text}\";\n")
