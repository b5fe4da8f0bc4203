#!/bin/sh
# json-logic-js's own tests.json, with json-logic-js semantics.
exec "${GG_BUILDDIR:-.}/tests/jsonlogic/jsonlogic-suite" "${GG_SHARED:-../shared}/conformance/jsonlogic/tests.json"
