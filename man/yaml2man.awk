# yaml2man.awk — graphgate.yaml(5) from deploy/graphgate.yaml, so the manual cannot drift
# from the annotated example file: every key line becomes an entry (full dotted name,
# default, environment variable) described by the comment block right above it.
#
#   LC_ALL=C awk -v version=X.Y.Z -f man/yaml2man.awk deploy/graphgate.yaml > graphgate.yaml.5
#   LC_ALL=C awk -v mode=keys -f man/yaml2man.awk deploy/graphgate.yaml   # the keys, one a line
#
# The file's shape (what the configuration loader reads): comment blocks, `key: value`
# lines, `section:` lines whose keys are indented below them. A comment block attaches to
# the key or section directly below it; a key right after another key (no comment between)
# shares that key's description; a block followed by a blank line is the page's
# introduction before the first key, a free paragraph after it. Nothing is dropped.
# Runs under POSIX awk (mawk, gawk, busybox) with LC_ALL=C: UTF-8 is decoded byte-wise.

BEGIN {
    for (i = 128; i < 256; i++) ord[sprintf("%c", i)] = i
    npend = 0; nintro = 0; seen_key = 0; nstack = 0; heading = ""; nkeys = 0
    hexd = "0123456789ABCDEF"
}

# ---- troff output helpers -----------------------------------------------------------------

function hex4(n,    s, i) {
    s = ""
    for (i = 0; i < 4; i++) { s = substr(hexd, n % 16 + 1, 1) s; n = int(n / 16) }
    return s
}

# Text for troff: backslashes escaped, UTF-8 sequences as \[uXXXX], a leading . or ' made
# literal (a comment starting ".env" must not become a request).
function esc(s,    out, i, c, b, n, k, cp) {
    gsub(/\\/, "\\e", s)
    out = ""
    n = length(s)
    for (i = 1; i <= n; i++) {
        c = substr(s, i, 1)
        b = (c in ord) ? ord[c] : 0
        if (b < 128) { out = out c; continue }
        if (b >= 240) { cp = b - 240; k = 3 } else if (b >= 224) { cp = b - 224; k = 2 } else if (b >= 192) { cp = b - 192; k = 1 } else { out = out "?"; continue }
        while (k-- > 0 && i < n) { i++; cp = cp * 64 + (ord[substr(s, i, 1)] - 128) }
        out = out (cp > 65535 ? "?" : "\\[u" hex4(cp) "]")
    }
    if (out ~ /^[.']/) out = "\\&" out
    return out
}

function emit(line) { if (mode != "keys") print line }

# The pending comment block as troff paragraphs ("#" alone separates paragraphs).
function emit_block(para,    i, started) {
    started = 0
    for (i = 1; i <= npend; i++) {
        if (pend[i] == "") { if (started) { emit(para); started = 0 } continue }
        emit(esc(pend[i])); started = 1
    }
    npend = 0
}

function envname(key,    e) {
    e = toupper(key); gsub(/\./, "_", e)
    return "GRAPHGATE_" e
}

function show_default(v) {
    if (v == "" || v == "~" || v == "null") return "none"
    if (v == "[]") return "empty list"
    if (v == "\"\"" || v == "''") return "\"\" (empty)"
    return v
}

# ---- structure ----------------------------------------------------------------------------

# Drop sections at indent >= ind; return the dotted prefix of the ones left.
function prefix_for(ind,    p, i) {
    while (nstack > 0 && sind[nstack] >= ind) nstack--
    p = ""
    for (i = 1; i <= nstack; i++) p = p sname[i] "."
    return p
}

function set_heading(h) {
    if (heading == h) return
    heading = h
    emit(".SS \"" esc(h) "\"")
}

function flush_intro() {
    if (npend == 0) return
    for (i = 1; i <= npend; i++) intro[++nintro] = pend[i]
    intro[++nintro] = ""
    npend = 0
}

function open_section(ind, name, full) {
    sind[++nstack] = ind; sname[nstack] = name
    set_heading(full)
    if (npend) { emit(".PP"); emit_block(".PP") }
}

function tag(full, value) {
    keys[++nkeys] = full
    if (mode == "keys") print full
    # \% keeps the names whole: a break inside GRAPHGATE_POLICY_... misleads
    emit("\\fB\\%" esc(full) "\\fR (default: \\fI" esc(show_default(value)) "\\fR; environment: \\fB\\%" esc(envname(full)) "\\fR)")
}

function header(    i, started) {
    print ".\\\" Generated from deploy/graphgate.yaml by man/yaml2man.awk; edit those instead."
    print ".TH GRAPHGATE.YAML 5 \"\" \"graphgate " esc(version) "\" \"File Formats\""
    print ".\\\" Left-aligned: justified entry tags stretch into gaps around the long variable names."
    print ".ad l"
    print ".SH NAME"
    print "graphgate.yaml \\- graphgate configuration file"
    print ".SH SYNOPSIS"
    print ".B graphgate serve \\-\\-config"
    print ".I /etc/graphgate/graphgate.yaml"
    print ".SH DESCRIPTION"
    for (i = 1; i <= nintro; i++) {
        if (intro[i] == "") { if (started) print ".PP"; started = 0; continue }
        print esc(intro[i]); started = 1
    }
    if (started) print ".PP"
    print "Each entry below gives the key's full dotted name, its default (the value a missing key"
    print "takes) and the environment variable that overrides it. In the file, a dotted name"
    print "\\fBsection.key\\fR is written as \\fBkey\\fR indented under a \\fBsection:\\fR line."
    print ".SH KEYS"
}

function trailer() {
    if (mode == "keys") return
    if (!seen_key) header()
    print ".SH ENVIRONMENT"
    print ".TP"
    print ".B GRAPHGATE_CONFIG"
    print "The configuration file to read when no \\fB\\-\\-config\\fR flag is given."
    print ".TP"
    print ".B GRAPHGATE_\\fIKEY\\fR"
    print "Overrides a key of the file (dotted name in capitals, dots as underscores; lists"
    print "comma-separated), as listed with each key above. Command-line flags override both."
    print ".SH FILES"
    print "The annotated example this page is generated from is \\fBdeploy/graphgate.yaml\\fR in"
    print "the source distribution; loading it unchanged gives exactly the defaults."
    print ".SH SEE ALSO"
    print ".BR graphgate (1)"
}

# ---- input lines --------------------------------------------------------------------------

{ L[++NL] = $0 }

function is_blank(s) { return s ~ /^[ \t]*$/ }
function is_comment(s) { return s ~ /^[ \t]*#/ }
function indent_of(s) { match(s, /^ */); return RLENGTH }

# The next line that is neither blank nor a comment, after line i ("" at the end).
function next_content(i) {
    for (i++; i <= NL; i++) if (!is_blank(L[i]) && !is_comment(L[i])) return L[i]
    return ""
}

# Block-list items (`- x` lines) right below key line i, as "[x, y]"; "" when none.
function block_list(i, ind,    out, s) {
    out = ""
    for (i++; i <= NL; i++) {
        s = L[i]
        if (is_blank(s) || is_comment(s)) continue
        if (s !~ /^ *-( |$)/ || indent_of(s) < ind) break
        sub(/^ *-[ \t]*/, "", s)
        out = out (out == "" ? "" : ", ") s
    }
    return out == "" ? "" : "[" out "]"
}

# Parse key line s into K_ind, K_name, K_value; false when s is not a key line.
function parse_key(s) {
    if (s !~ /^ *[A-Za-z0-9_-]+:([ \t]|$)/) return 0
    K_ind = indent_of(s)
    s = substr(s, K_ind + 1)
    K_name = s; sub(/:.*/, "", K_name)
    K_value = s; sub(/^[^:]*:[ \t]*/, "", K_value)
    if (K_value ~ /^"/ && match(K_value, /^"([^"\\]|\\.)*"/)) K_value = substr(K_value, 1, RLENGTH)
    else if (K_value ~ /^'/ && match(K_value, /^'[^']*'/)) K_value = substr(K_value, 1, RLENGTH)
    else sub(/[ \t]+#.*$/, "", K_value)
    sub(/[ \t]+$/, "", K_value)
    # A comment after the value (`key: 5  # why`) joins the description.
    K_note = substr(s, length(K_name) + 2)
    if (K_note ~ /^[ \t]*["']/) { sub(/^[ \t]*/, "", K_note); K_note = substr(K_note, length(K_value) + 1) }
    K_note = match(K_note, /(^|[ \t])#/) ? substr(K_note, RSTART + RLENGTH) : ""
    sub(/^[ \t]+/, "", K_note)
    return 1
}

# Is line i a key with a value (not a section header)? Sets K_* as parse_key does.
function is_leaf(i,    nx, lst) {
    if (!parse_key(L[i])) return 0
    nx = next_content(i)
    if (K_value == "" && nx != "" && nx !~ /^ *-( |$)/ && indent_of(nx) > K_ind) return 0
    if (K_value == "" && (lst = block_list(i, K_ind)) != "") K_value = lst
    return 1
}

# Queue key's same-line comment (parse_key's K_note) for its description.
function note(key) {
    if (K_note == "") return
    if (npend) pend[++npend] = ""
    pend[++npend] = (gkeys > 1 ? key ": " : "") K_note
}

# Handle line i; returns how many lines it used (0: not a line this file may hold).
function line_at(i,    s, full, ind, j) {
    s = L[i]
    if (is_blank(s)) {
        if (!seen_key && mode != "keys") flush_intro()
        else if (npend) { emit(".PP"); emit_block(".PP") }
        return 1
    }
    if (is_comment(s)) {
        sub(/^[ \t]*#/, "", s); sub(/^ /, "", s); sub(/[ \t]+$/, "", s)
        pend[++npend] = s
        return 1
    }
    if (s ~ /^ *-( |$)/) return 1   # an item of the list key above, shown as its default
    if (!parse_key(s)) return 0
    if (mode != "keys" && !seen_key) header()
    seen_key = 1
    if (!is_leaf(i)) {
        open_section(K_ind, K_name, prefix_for(K_ind) K_name)
        return 1
    }
    ind = K_ind
    # Keys right below with no comment of their own share this description.
    for (j = i + 1; j <= NL && is_leaf(j) && K_ind == ind; j++) ;
    gkeys = j - i
    if (ind == 0) set_heading("General")
    for (j = i; j < i + gkeys; j++) {
        is_leaf(j)
        full = prefix_for(ind) K_name
        emit(j == i ? ".TP" : ".TQ")
        tag(full, K_value)
        note(full)
    }
    if (npend) emit_block(".IP")
    return j - i
}

END {
    for (i = 1; i <= NL; i += used) {
        if (!(used = line_at(i))) {
            printf "%s:%d: cannot read this line: %s\n", FILENAME, i, L[i] > "/dev/stderr"
            exit 1
        }
    }
    if (nkeys == 0) { print FILENAME ": no keys found" > "/dev/stderr"; exit 1 }
    trailer()
}
