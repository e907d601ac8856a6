// compile.cpp -- MSL source -> a shared object of emulated kernels.
//
// The source is compiled as C++ unchanged but for `threadgroup`, whose two
// uses become emulator types (metal_stdlib explains why):
//   threadgroup T name[N];   ->  auto name = ::mtl::tg_alloc<T>(ID, (N));
//   threadgroup T *          ->  ::mtl::tg_ptr<T>
// Any other use of `threadgroup` is refused. The scan also refuses what the
// Metal compiler would reject or what would run differently here: double,
// std::, exceptions, dynamic allocation, float literals without a suffix
// (a double in C++), and C-style casts to vector types (a bit-cast in
// clang, a conversion in Metal). Line numbers are kept, so compiler
// messages point into the MSL.
#include "mtl_emu.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char **environ;

#ifndef MTL_EMU_CXX_DEFAULT
#define MTL_EMU_CXX_DEFAULT "clang++-22"
#endif
#ifndef MTL_EMU_INCLUDE_DEFAULT
#define MTL_EMU_INCLUDE_DEFAULT "."
#endif
#ifndef MTL_EMU_RTLIB_DEFAULT /* compiler-rt builtins: float <-> __bf16 conversions */
#define MTL_EMU_RTLIB_DEFAULT ""
#endif

namespace {

struct Scanner {
    std::string src;
    size_t i = 0;
    int line = 1;
    std::string out;
    std::vector<std::string> kernels;
    std::string errors;
    unsigned next_decl = 0;
    int id = 0; // the source's index, for unique declaration ids

    explicit Scanner(const std::string &s, int index) : src(s), id(index) {}

    void error(int at_line, const std::string &m)
    {
        if (errors.size() < 4000)
            errors += "source " + std::to_string(id) + ":" + std::to_string(at_line) + ": error: " + m + "\n";
    }
    bool ident_start(char c) const { return isalpha((unsigned char)c) || c == '_'; }
    bool ident_char(char c) const { return isalnum((unsigned char)c) || c == '_'; }
    char at(size_t k) const { return k < src.size() ? src[k] : '\0'; }

    // Skips spaces and comments from k; returns the next position.
    size_t skip_space(size_t k) const
    {
        for (;;) {
            while (k < src.size() && isspace((unsigned char)src[k]))
                k++;
            if (at(k) == '/' && at(k + 1) == '/') {
                while (k < src.size() && src[k] != '\n')
                    k++;
            } else if (at(k) == '/' && at(k + 1) == '*') {
                size_t e = src.find("*/", k + 2);
                k = e == std::string::npos ? src.size() : e + 2;
            } else {
                return k;
            }
        }
    }
    std::string ident_at(size_t k) const
    {
        size_t e = k;
        while (e < src.size() && ident_char(src[e]))
            e++;
        return src.substr(k, e - k);
    }
    // The end of a balanced bracket group starting at k (src[k] is open).
    size_t balanced(size_t k, char open, char close) const
    {
        int depth = 0;
        for (; k < src.size(); k++) {
            if (src[k] == open)
                depth++;
            else if (src[k] == close && --depth == 0)
                return k + 1;
        }
        return src.size();
    }
    int lines_in(size_t a, size_t b) const
    {
        int n = 0;
        for (size_t k = a; k < b && k < src.size(); k++)
            n += src[k] == '\n';
        return n;
    }

    // After `threadgroup` (at i, which ends at k): a storage declaration or a
    // pointer type. Returns false when it is neither.
    bool threadgroup(size_t k)
    {
        k = skip_space(k);
        if (src.compare(k, 13, "__attribute__") == 0 || src.compare(k, 7, "alignas") == 0) {
            size_t p = src.find('(', k);
            k = skip_space(balanced(p, '(', ')'));
        }
        std::string type, last;
        size_t last_at = 0;
        while (k < src.size()) {
            if (ident_start(src[k])) {
                if (!last.empty())
                    type += (type.empty() ? "" : " ") + last;
                last = ident_at(k);
                last_at = k;
                k = skip_space(k + last.size());
            } else if (src[k] == ':' && at(k + 1) == ':') {
                last += "::";
                k = skip_space(k + 2);
                if (ident_start(at(k))) {
                    last += ident_at(k);
                    k = skip_space(k + ident_at(k).size());
                }
            } else if (src[k] == '<') {
                size_t e = balanced(k, '<', '>');
                last += src.substr(k, e - k);
                k = skip_space(e);
            } else {
                break;
            }
        }
        (void)last_at;
        if (at(k) == '*' && !last.empty()) { // a pointer type
            type += (type.empty() ? "" : " ") + last;
            out += "::mtl::tg_ptr<" + type + ">";
            i = k + 1;
            return true;
        }
        if (at(k) == '[' && !type.empty() && !last.empty()) { // storage: type name[N];
            size_t e = balanced(k, '[', ']');
            std::string count = src.substr(k + 1, e - k - 2);
            size_t semi = skip_space(e);
            if (at(semi) != ';') {
                error(line, "threadgroup arrays have one dimension and no initializer here");
                return false;
            }
            out += "auto " + last + " = ::mtl::tg_alloc<" + type + ">(" + std::to_string(id * 1000 + next_decl++) +
                   "u, (" + count + "));";
            int n = lines_in(i, semi);
            out.append((size_t)n, '\n');
            line += n;
            i = semi + 1;
            return true;
        }
        return false;
    }

    // Checks an identifier (at i) for what MSL lacks; handles threadgroup
    // and records kernels.
    void identifier()
    {
        std::string w = ident_at(i);
        size_t end = i + w.size();
        if (w == "threadgroup") {
            if (!threadgroup(end)) {
                error(line, "unsupported use of threadgroup (the emulator takes `threadgroup T name[N];` at kernel "
                            "scope and `threadgroup T *`)");
                out += w;
                i = end;
            }
            return;
        }
        if (w == "kernel") {
            size_t k = skip_space(end);
            if (ident_at(k) == "void") {
                k = skip_space(k + 4);
                if (ident_start(at(k)))
                    kernels.push_back(ident_at(k));
            }
        }
        static const char *const banned[] = {"double", "new", "delete", "throw", "try", "catch", "malloc", "free",
                                             "printf", "virtual", "typeid", "dynamic_cast", nullptr};
        for (const char *const *b = banned; *b; b++)
            if (w == *b)
                error(line, "'" + w + "' does not exist in MSL");
        if (w == "std" && src.compare(skip_space(end), 2, "::") == 0)
            error(line, "the C++ standard library (std::) does not exist in MSL");
        out += w;
        i = end;
    }

    // A number at i: a float literal needs a suffix (f or h).
    void number()
    {
        size_t k = i;
        bool hex = src[k] == '0' && (at(k + 1) == 'x' || at(k + 1) == 'X');
        bool is_float = false;
        if (hex)
            k += 2;
        while (k < src.size()) {
            char c = src[k];
            if (isxdigit((unsigned char)c) && (hex || isdigit((unsigned char)c)))
                k++;
            else if (c == '.')
                is_float = true, k++;
            else if (!hex && (c == 'e' || c == 'E') && (isdigit((unsigned char)at(k + 1)) || at(k + 1) == '-' || at(k + 1) == '+'))
                is_float = true, k += 2;
            else
                break;
        }
        size_t suffix = k;
        while (k < src.size() && ident_char(src[k]))
            k++;
        std::string suf = src.substr(suffix, k - suffix);
        if (is_float && suf != "f" && suf != "F" && suf != "h" && suf != "H")
            error(line, "float literal '" + src.substr(i, k - i) + "' needs a suffix (f or h): unsuffixed it is a "
                        "double in C++");
        out += src.substr(i, k - i);
        i = k;
    }

    // `(float4)x`: a C-style cast to a vector type.
    void check_vector_cast()
    {
        size_t k = skip_space(i + 1);
        std::string w = ident_start(at(k)) ? ident_at(k) : "";
        size_t n = w.size();
        if (n < 2 || !strchr("234", w[n - 1]))
            return;
        static const char *const scalars[] = {"bool", "char", "uchar", "short", "ushort", "int", "uint", "long",
                                              "ulong", "half", "float", "bfloat", nullptr};
        for (const char *const *s = scalars; *s; s++)
            if (w.compare(0, n - 1, *s) == 0 && strlen(*s) == n - 1 && at(skip_space(k + n)) == ')') {
                size_t b = out.find_last_not_of(" \t\n");
                bool call = b != std::string::npos && (ident_char(out[b]) || out[b] == ')' || out[b] == ']');
                if (!call)
                    error(line, "C-style cast to " + w + " (a bit-cast in clang): use the constructor " + w +
                                    "(x) or as_type<" + w + ">(x)");
            }
    }

    void run()
    {
        while (i < src.size()) {
            char c = src[i];
            if (c == '\n') {
                line++;
                out += c;
                i++;
            } else if (c == '/' && (at(i + 1) == '/' || at(i + 1) == '*')) {
                size_t e = skip_space(i);
                line += lines_in(i, e);
                out += src.substr(i, e - i);
                i = e;
            } else if (c == '"' || c == '\'') {
                size_t e = i + 1;
                while (e < src.size() && src[e] != c && src[e] != '\n')
                    e += src[e] == '\\' ? 2 : 1;
                out += src.substr(i, e + 1 - i);
                i = e + 1;
            } else if (c == '#') { // preprocessor line, copied
                size_t e = src.find('\n', i);
                e = e == std::string::npos ? src.size() : e;
                out += src.substr(i, e - i);
                i = e;
            } else if (ident_start(c)) {
                identifier();
            } else if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)at(i + 1)))) {
                number();
            } else {
                if (c == '(')
                    check_vector_cast();
                out += c;
                i++;
            }
        }
    }
};

bool read_file(const std::string &path, std::string &s)
{
    FILE *f = fopen(path.c_str(), "rb");
    if (!f)
        return false;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        s.append(buf, n);
    fclose(f);
    return true;
}

// Starts argv with stdout and stderr into log_path; the pid, or -1.
pid_t start(const std::vector<std::string> &args, const std::string &log_path)
{
    std::vector<char *> argv;
    for (const std::string &a : args)
        argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    return rc == 0 ? pid : -1;
}

// The exit status of a started process (-1: not started or killed).
int finish(pid_t pid)
{
    int status = 0;
    if (pid < 0)
        return -1;
    while (waitpid(pid, &status, 0) < 0) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void copy_log(const std::string &text, char *log, size_t loglen)
{
    if (!log || !loglen)
        return;
    size_t n = text.size() < loglen - 1 ? text.size() : loglen - 1;
    memcpy(log, text.data(), n);
    log[n] = 0;
}

const char *setting(const char *env, const char *dflt) { return getenv(env) ? getenv(env) : dflt; }

// The sources, rewritten, in `jobs` translation units of about equal size.
bool translate(const char *const *sources, int n, int jobs, std::vector<std::string> &units, std::string &errors)
{
    units.assign((size_t)jobs, "// generated by the MSL emulator's compile step\n");
    std::vector<std::string> exports((size_t)jobs);
    for (int s = 0; s < n; s++) {
        size_t j = 0;
        for (size_t k = 1; k < units.size(); k++)
            if (units[k].size() < units[j].size())
                j = k;
        Scanner sc(sources[s], s);
        sc.run();
        errors += sc.errors;
        std::string ns = "tj_src" + std::to_string(s);
        units[j] += "namespace " + ns + " {\n#line 1 \"source" + std::to_string(s) + ".metal\"\n" + sc.out + "\n}\n";
        for (const std::string &k : sc.kernels)
            exports[j] += "MTL_EXPORT_KERNEL(" + ns + ", " + k + ")\n";
    }
    for (size_t j = 0; j < units.size(); j++)
        units[j] += exports[j];
    return errors.empty();
}

} // namespace

// Each translation unit compiles to an object in its own process (-O0:
// generated kernels are large, and the run is dominated by the threads'
// switches, not by the code), then one link.
extern "C" int mtl_emu_compile(const char *const *sources, int n, const char *so_path, char *log, size_t loglen)
{
    int jobs = atoi(setting("MTL_EMU_JOBS", "2"));
    jobs = jobs < 1 ? 1 : jobs > n ? (n > 0 ? n : 1) : jobs;
    std::vector<std::string> units;
    std::string errors, text;
    if (!translate(sources, n, jobs, units, errors)) {
        copy_log(errors, log, loglen);
        return -1;
    }
    const std::string base = so_path, cxx = setting("MTL_EMU_CXX", MTL_EMU_CXX_DEFAULT);
    std::vector<std::string> objs;
    std::vector<pid_t> pids;
    for (size_t j = 0; j < units.size(); j++) {
        std::string cpp = base + "." + std::to_string(j) + ".cpp", obj = base + "." + std::to_string(j) + ".o";
        FILE *f = fopen(cpp.c_str(), "wb");
        if (!f || fwrite(units[j].data(), 1, units[j].size(), f) != units[j].size() || fclose(f) != 0) {
            copy_log("cannot write " + cpp, log, loglen);
            return -1;
        }
        pids.push_back(start({cxx, "-std=c++17", setting("MTL_EMU_OPT", "-O0"), "-fPIC", "-fno-exceptions",
                              "-fno-rtti",
                              // a*b+c is not fused behind the source's back (as the interpreter computes)
                              "-ffp-contract=off", "-Wall", "-Wno-unused-parameter", "-Wno-unused-variable",
                              "-Wno-unused-but-set-variable", "-Wno-unused-function", "-I",
                              setting("MTL_EMU_INCLUDE", MTL_EMU_INCLUDE_DEFAULT), "-include", "metal_stdlib", "-x",
                              "c++", "-c", cpp, "-o", obj},
                             obj + ".log"));
        objs.push_back(obj);
    }
    int failed = 0;
    for (size_t j = 0; j < pids.size(); j++) {
        int rc = finish(pids[j]);
        failed |= rc != 0;
        if (rc < 0)
            text += "cannot run " + cxx + "\n";
        read_file(objs[j] + ".log", text);
        unlink((objs[j] + ".log").c_str());
        if (!getenv("MTL_EMU_KEEP"))
            unlink((base + "." + std::to_string(j) + ".cpp").c_str());
    }
    if (!failed) {
        std::vector<std::string> link = {cxx, "-shared", "-o", base};
        link.insert(link.end(), objs.begin(), objs.end());
        std::string rtlib = setting("MTL_EMU_RTLIB", MTL_EMU_RTLIB_DEFAULT);
        if (!rtlib.empty())
            link.push_back(rtlib);
        failed = finish(start(link, base + ".log")) != 0;
        read_file(base + ".log", text);
        unlink((base + ".log").c_str());
    }
    for (const std::string &o : objs)
        unlink(o.c_str());
    copy_log(text, log, loglen); // errors, or warnings
    return failed ? -1 : 0;
}

extern "C" void *mtl_emu_open(const char *so_path, char *err, size_t errlen)
{
    void *h = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
    if (!h && err && errlen)
        snprintf(err, errlen, "%s", dlerror());
    return h;
}

extern "C" mtl_emu_entry mtl_emu_lookup(void *so, int source, const char *name)
{
    std::string sym = "tj_src" + std::to_string(source) + "__" + name + "__mtl_entry";
    return (mtl_emu_entry)dlsym(so, sym.c_str());
}

extern "C" void mtl_emu_close(void *so)
{
    if (so)
        dlclose(so);
}
