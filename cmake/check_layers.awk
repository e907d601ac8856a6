# awk -f check_layers.awk TABLE FILE... : checks the #include lines of every
# stage (cmake/layers.cmake says why). TABLE lines: STAGE DIRS USES HEADERS,
# each a comma-separated list ("-" for none). A project header is written
# with its folder ("lower/layout.h") or as "tilejit/NAME.h"; it may be
# included from its own stage or from a stage that uses it; a *_internal.h
# only from its own folder. Prints FILE:LINE: why, for each violation;
# exits 1 when there was one.
function split_list(s, arr) { return s == "-" ? 0 : split(s, arr, ",") }
FNR == NR {
    stage = $1
    n = split_list($2, d); for (i = 1; i <= n; i++) dir_stage[d[i]] = stage
    n = split_list($3, u); for (i = 1; i <= n; i++) uses[stage "," u[i]] = 1
    n = split_list($4, h); for (i = 1; i <= n; i++) header_stage[h[i]] = stage
    uses_text[stage] = $3
    next
}
FNR == 1 {
    file = FILENAME
    sub(/^.*\/\.\//, "", file) # the path below the root (given as ROOT/./dir/file)
    dir = file; sub(/\/[^\/]*$/, "", dir)
    self = dir_stage[dir]
}
/^[ \t]*#[ \t]*include[ \t]*"/ {
    inc = $0
    sub(/^[^"]*"/, "", inc); sub(/".*$/, "", inc)
    if (inc == "tilejit_build_id.h")
        next # generated, for runtime/cache_key.c
    where = file ":" FNR ": "
    if (inc !~ /\//) { print where "include \"" inc "\" without its folder (write \"" dir "/" inc "\")"; bad = 1; next }
    inc_dir = inc; sub(/\/[^\/]*$/, "", inc_dir)
    inc_name = inc; sub(/^.*\//, "", inc_name)
    if (inc_dir == "tilejit")
        owner = (inc_name in header_stage) ? header_stage[inc_name] : "runtime"
    else if (inc_dir in dir_stage) {
        owner = dir_stage[inc_dir]
        if (inc_name ~ /_internal\.h$/ && inc_dir != dir) { print where "\"" inc "\" is private to " inc_dir "/"; bad = 1; next }
    } else { print where "include \"" inc "\" is in no stage"; bad = 1; next }
    if (owner != self && !((self "," owner) in uses)) {
        print where self " may not include \"" inc "\" (stage " owner "); " self " uses: " uses_text[self]
        bad = 1
    }
}
END { exit bad }
