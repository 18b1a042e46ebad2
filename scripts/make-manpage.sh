#!/bin/sh
# Writes the sf(1) man page to docs/sf.1 (or to the path given), generated from sf's own help by
# swift-argument-parser's `generate-manual` command plugin (mdoc, one page with every subcommand).
#
#   scripts/make-manpage.sh [OUTPUT]          then: man -l docs/sf.1
#
# It builds the package (debug by default, reusing the products of the README's build and test
# commands, whose C code is compiled with -Xcc -O2, so the flag is given here too: without it every
# C target would be rebuilt; CONFIGURATION=release for a release build) and the plugin's
# generate-manual tool, all offline from the resolved
# dependencies. The page is dated with the day it is generated (SF_MANPAGE_DATE=yyyy-mm-dd to fix it).
# The test ManPageAndCompletionTests fails when docs/sf.1 no longer matches `sf`'s help.
# Note: generate-manual drops non-ASCII characters, so sf's help texts are kept ASCII.
set -eu
cd "$(dirname "$0")/.."
output="${1:-docs/sf.1}"
swift package -Xcc -O2 --jobs "${JOBS:-2}" generate-manual --configuration "${CONFIGURATION:-debug}" \
    --date "${SF_MANPAGE_DATE:-$(date -u +%Y-%m-%d)}"
cp .build/plugins/GenerateManual/outputs/sf/sf.1 "$output"
echo "wrote $output"
