#!/bin/sh
# The compat suites (index.json lists them), with compat_semantics.
exec "${GG_BUILDDIR:-.}/tests/jsonlogic/jsonlogic-suite" "${GG_SHARED:-../shared}/conformance/jsonlogic/compat-suites/index.json"
