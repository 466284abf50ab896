#!/usr/bin/env python3
"""Write a Tally dataset of the installed CPython's own regression-test modules.

Each line is {"id": "<module>"}; run it with the exec evaluator and `python3 -m test {id}` (see README.md).

    python3 make_dataset.py --out cases.jsonl --limit 80
"""
import argparse
import json
import subprocess
import sys

# Modules that take minutes, need the network or a GUI, or spawn heavy process pools: left out by default
# so a laptop demo finishes in a few minutes. --all keeps them.
SLOW_OR_HEAVY = {
    "test_asyncio", "test_concurrent_futures", "test_multiprocessing_fork", "test_multiprocessing_forkserver",
    "test_multiprocessing_spawn", "test_multiprocessing_main_handling", "test_io", "test_subprocess",
    "test_signal", "test_socket", "test_ssl", "test_threading", "test_tkinter", "test_ttk", "test_ttk_textonly",
    "test_idle", "test_tix", "test_turtle", "test_capi", "test_lib2to3", "test_tools", "test_peg_generator",
    "test_regrtest", "test_compileall", "test_gdb", "test_venv", "test_zipfile", "test_zipfile64", "test_lzma",
    "test_bz2", "test_largefile", "test_mmap", "test_pickle", "test_pickletools", "test_tarfile", "test_unparse",
    "test_decimal", "test_statistics", "test_math", "test_urllib2net", "test_urllibnet", "test_socketserver",
    "test_httplib", "test_httpservers", "test_imaplib", "test_smtpnet", "test_timeout", "test_ftplib",
    "test_logging", "test_selectors", "test_poll", "test_queue", "test_thread", "test_threadedtempfile",
    "test_import", "test_importlib", "test_sqlite3", "test_email", "test_weakref", "test_re", "test_descr",
    "test_inspect", "test_pydoc", "test_trace", "test_sys_settrace", "test_faulthandler", "test_embed",
    "test_cmd_line_script", "test_support", "test_time", "test_datetime", "test_hashlib", "test_builtin",
    "test_unicodedata", "test_codecs", "test_zlib", "test_xmlrpc", "test_pty", "test_os", "test_shutil",
    "test_posix", "test_fork1", "test_wait3", "test_wait4", "test_eintr", "test_kqueue", "test_epoll",
    "test_devpoll", "test_asyncore", "test_asynchat", "test_smtpd", "test_nntplib", "test_winreg",
    "test_dtrace", "test_perf_profiler", "test_clinic", "test_traceback", "test_sys", "test_set", "test_dict",
    "test_list", "test_tuple", "test_bigmem", "test_bigaddrspace", "test_memoryio", "test_file_eintr",
    # Hangs (futex wait, no CPU) on CPython 3.11.7 here, run directly or under Tally alike: measured 2026-11-30.
    "test__xxsubinterpreters",
    # The same: blocked with no CPU for 16 minutes, under xargs (bench.py --limit 200), 2026-12-06.
    "test_interpreters",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="cases.jsonl", help="dataset file to write (default: cases.jsonl)")
    parser.add_argument("--limit", type=int, default=0, help="keep only the first N modules (default: all)")
    parser.add_argument("--all", action="store_true", help="keep slow and heavy modules too")
    args = parser.parse_args()

    listed = subprocess.run([sys.executable, "-m", "test", "--list-tests"], capture_output=True, text=True, check=True)
    modules = [line.strip() for line in listed.stdout.splitlines() if line.strip().startswith("test_")]
    if not args.all:
        modules = [m for m in modules if m not in SLOW_OR_HEAVY]
    if args.limit > 0:
        modules = modules[: args.limit]
    with open(args.out, "w", encoding="utf-8") as out:
        for module in modules:
            out.write(json.dumps({"id": module}) + "\n")
    print(f"wrote {len(modules)} modules to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
