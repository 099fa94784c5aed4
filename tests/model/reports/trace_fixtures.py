"""One realistic stack trace per format a bug report carries, with its frames written out by
hand: (path as printed, line, function, format), in text order, and the innermost of each stack."""

from __future__ import annotations

#: name -> (text, expected frames in text order, the innermost frame of each stack in text order)
TRACES: dict[str, tuple[str, list[tuple], list[tuple]]] = {}


def _add(name, text, frames, innermost):
    TRACES[name] = (text, frames, innermost)


_add("cpython", '''Traceback (most recent call last):
  File "/home/me/app.py", line 12, in <module>
    main()
  File "/venv/lib/python3.11/site-packages/shop/cart.py", line 19, in total
    return apply_discount(amount, coupon)
ValueError: bad coupon
''', [("/home/me/app.py", 12, "<module>", "cpython"),
      ("/venv/lib/python3.11/site-packages/shop/cart.py", 19, "total", "cpython")],
    [("/venv/lib/python3.11/site-packages/shop/cart.py", 19, "total", "cpython")])

_add("ipython", '''---------------------------------------------------------------------------
KeyError                                  Traceback (most recent call last)
Cell In[3], line 1
----> 1 df["x"]

File ~/miniconda3/lib/python3.10/site-packages/pandas/core/frame.py:3807, in DataFrame.__getitem__(self, key)
   3805 if self.columns.nlevels > 1:
-> 3807     indexer = self.columns.get_loc(key)

File ~/miniconda3/lib/python3.10/site-packages/pandas/core/indexes/base.py:3804, in Index.get_loc(self, key)
-> 3804     raise KeyError(key) from err

KeyError: 'x'
''', [("~/miniconda3/lib/python3.10/site-packages/pandas/core/frame.py", 3807, "DataFrame.__getitem__", "ipython"),
      ("~/miniconda3/lib/python3.10/site-packages/pandas/core/indexes/base.py", 3804, "Index.get_loc", "ipython")],
    [("~/miniconda3/lib/python3.10/site-packages/pandas/core/indexes/base.py", 3804, "Index.get_loc", "ipython")])

_add("ipython_arrows", '''---------------------------------------------------------------------------
UnitConversionError                       Traceback (most recent call last)
<ipython-input-4-1f2d> in <module>
----> 1 q.to(u.m)

~/code/astropy/units/quantity.py in to(self, unit, equivalencies)
    950         try:
--> 951             return self._to(unit)

/usr/lib/python3/site-packages/astropy/units/core.py in _to(self, other)
    898     def _to(self, other):
--> 900         raise UnitConversionError(other)
''', [("~/code/astropy/units/quantity.py", 951, "to", "ipython"),
      ("/usr/lib/python3/site-packages/astropy/units/core.py", 900, "_to", "ipython")],
    [("/usr/lib/python3/site-packages/astropy/units/core.py", 900, "_to", "ipython")])

_add("pytest", '''________________________________ test_total ________________________________

    def test_total():
        cart = Cart()
>       assert cart.total({"a": 1}, Coupon(10)) == 0.27

tests/test_cart.py:7: 
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

self = <shop.cart.Cart object at 0x7f>

    def total(self, prices, coupon=None):
        amount = sum(prices.values())
>       return apply_discount(amount, coupon)
E       ValueError: bad coupon

src/shop/cart.py:19: ValueError
''', [("tests/test_cart.py", 7, "test_total", "pytest"), ("src/shop/cart.py", 19, "total", "pytest")],
    [("src/shop/cart.py", 19, "total", "pytest")])

_add("pytest_short", '''tests/test_pricing.py:12: in test_round
    assert round_cents(0.275) == 0.28
src/shop/pricing.py:12: in round_cents
    return int(value * 100) / 100
E   AssertionError
''', [("tests/test_pricing.py", 12, "test_round", "pytest"), ("src/shop/pricing.py", 12, "round_cents", "pytest")],
    [("src/shop/pricing.py", 12, "round_cents", "pytest")])

_add("logging", '''2024-03-01T10:22:31.1234567Z     at parse (src/lib/parser.js:40:11)
2024-03-01 10:22:31,456 ERROR [worker-1]   tests/test_io.py:3: in test_read
E/AndroidRuntime( 4242):     at com.acme.app.MainActivity.onCreate(MainActivity.java:25)
web_1  |     at Object.handler (/srv/app/src/routes/user.js:17:9)
''', [("src/lib/parser.js", 40, "parse", "javascript"), ("tests/test_io.py", 3, "test_read", "pytest"),
      ("com/acme/app/MainActivity.java", 25, "com.acme.app.MainActivity.onCreate", "java"),
      ("/srv/app/src/routes/user.js", 17, "Object.handler", "javascript")],
    [("src/lib/parser.js", 40, "parse", "javascript"), ("tests/test_io.py", 3, "test_read", "pytest"),
     ("com/acme/app/MainActivity.java", 25, "com.acme.app.MainActivity.onCreate", "java"),
     ("/srv/app/src/routes/user.js", 17, "Object.handler", "javascript")])

_add("java", '''Exception in thread "main" java.lang.IllegalStateException: unexpected token
\tat com.fasterxml.jackson.core.json.ReaderBasedJsonParser._handleOddName(ReaderBasedJsonParser.java:1765)
\tat com.fasterxml.jackson.core.json.ReaderBasedJsonParser.<init>(ReaderBasedJsonParser.java:120)
\tat com.acme.App.lambda$main$0(App.java:7)
\tat java.base/java.lang.Thread.run(Thread.java:833)
Caused by: java.io.IOException: stream closed
\tat com.fasterxml.jackson.core.io.UTF8Reader$Buffer.fill(UTF8Reader.java:88)
\tat java.base/java.io.FileInputStream.readBytes(Native Method)
\t... 3 more
''', [("com/fasterxml/jackson/core/json/ReaderBasedJsonParser.java", 1765,
       "com.fasterxml.jackson.core.json.ReaderBasedJsonParser._handleOddName", "java"),
      ("com/fasterxml/jackson/core/json/ReaderBasedJsonParser.java", 120,
       "com.fasterxml.jackson.core.json.ReaderBasedJsonParser.<init>", "java"),
      ("com/acme/App.java", 7, "com.acme.App.lambda$main$0", "java"),
      ("java/lang/Thread.java", 833, "java.lang.Thread.run", "java"),
      ("com/fasterxml/jackson/core/io/UTF8Reader.java", 88, "com.fasterxml.jackson.core.io.UTF8Reader$Buffer.fill", "java"),
      ("java/io/FileInputStream.java", None, "java.io.FileInputStream.readBytes", "java")],
    [("com/fasterxml/jackson/core/json/ReaderBasedJsonParser.java", 1765,
      "com.fasterxml.jackson.core.json.ReaderBasedJsonParser._handleOddName", "java"),
     ("com/fasterxml/jackson/core/io/UTF8Reader.java", 88, "com.fasterxml.jackson.core.io.UTF8Reader$Buffer.fill", "java")])

_add("kotlin", '''java.lang.NullPointerException
    at com.acme.sync.SyncWorkerKt.runSync(SyncWorker.kt:42)
    at com.acme.sync.SyncWorker.doWork(SyncWorker.kt:17)
''', [("com/acme/sync/SyncWorker.kt", 42, "com.acme.sync.SyncWorkerKt.runSync", "java"),
      ("com/acme/sync/SyncWorker.kt", 17, "com.acme.sync.SyncWorker.doWork", "java")],
    [("com/acme/sync/SyncWorker.kt", 42, "com.acme.sync.SyncWorkerKt.runSync", "java")])

_add("go", '''panic: runtime error: invalid memory address or nil pointer dereference
[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4a1b2c]

goroutine 1 [running]:
google.golang.org/grpc.(*ClientConn).Close(0x0)
\t/home/u/go/pkg/mod/google.golang.org/grpc@v1.14.0/clientconn.go:301 +0x1c
main.main()
\t/home/u/src/app/main.go:12 +0x25

goroutine 7 [chan receive]:
google.golang.org/grpc/internal/transport.(*http2Client).reader[...](0xc000010000)
\t/home/u/go/pkg/mod/google.golang.org/grpc@v1.14.0/internal/transport/http2_client.go:1150 +0x4f
created by google.golang.org/grpc/internal/transport.newHTTP2Client in goroutine 1
\t/home/u/go/pkg/mod/google.golang.org/grpc@v1.14.0/internal/transport/http2_client.go:287 +0x8a
exit status 2
''', [("/home/u/go/pkg/mod/google.golang.org/grpc@v1.14.0/clientconn.go", 301, "grpc.ClientConn.Close", "go"),
      ("/home/u/src/app/main.go", 12, "main.main", "go"),
      ("/home/u/go/pkg/mod/google.golang.org/grpc@v1.14.0/internal/transport/http2_client.go", 1150,
       "transport.http2Client.reader", "go"),
      ("/home/u/go/pkg/mod/google.golang.org/grpc@v1.14.0/internal/transport/http2_client.go", 287,
       "transport.newHTTP2Client", "go")],
    [("/home/u/go/pkg/mod/google.golang.org/grpc@v1.14.0/clientconn.go", 301, "grpc.ClientConn.Close", "go"),
     ("/home/u/go/pkg/mod/google.golang.org/grpc@v1.14.0/internal/transport/http2_client.go", 1150,
      "transport.http2Client.reader", "go")])

_add("rust", '''thread 'main' panicked at src/walk.rs:88:14:
called `Option::unwrap()` on a `None` value
stack backtrace:
   0: rust_begin_unwind
             at /rustc/90c541806f23a127002de5b4038be731ba1458ca/library/std/src/panicking.rs:578:5
   1: core::panicking::panic_fmt
             at /rustc/90c541806f23a127002de5b4038be731ba1458ca/library/core/src/panicking.rs:67:14
   2: fd::walk::spawn_senders::h0123456789abcdef
             at ./src/walk.rs:88:14
   3: fd::main
note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.
''', [("src/walk.rs", 88, None, "rust"),
      ("/rustc/90c541806f23a127002de5b4038be731ba1458ca/library/std/src/panicking.rs", 578, "rust_begin_unwind", "rust"),
      ("/rustc/90c541806f23a127002de5b4038be731ba1458ca/library/core/src/panicking.rs", 67,
       "core::panicking::panic_fmt", "rust"),
      ("./src/walk.rs", 88, "fd::walk::spawn_senders", "rust"),
      (None, None, "fd::main", "rust")],
    [("src/walk.rs", 88, None, "rust"),
     ("/rustc/90c541806f23a127002de5b4038be731ba1458ca/library/std/src/panicking.rs", 578, "rust_begin_unwind", "rust")])

_add("rust_old", '''thread 'main' panicked at 'Mismatch between definition and access of `threads`. Could not downcast to TypeId { t: 1834 }
need to downcast to TypeId { t: 1239 }', src/app.rs:99:17
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
''', [("src/app.rs", 99, None, "rust")], [("src/app.rs", 99, None, "rust")])

_add("javascript", '''TypeError: Cannot read properties of undefined (reading 'format')
    at Dayjs.format (/home/u/proj/node_modules/dayjs/esm/index.js:250:20)
    at Object.<anonymous> (/home/u/proj/test.js:3:13)
    at async Promise.all (index 0)
    at async render (webpack:///./src/ui/App.tsx:12:5)
    at node:internal/main/run_main_module:23:47
    at /home/u/proj/src/util.js:5:1
''', [("/home/u/proj/node_modules/dayjs/esm/index.js", 250, "Dayjs.format", "javascript"),
      ("/home/u/proj/test.js", 3, None, "javascript"),
      (None, None, "Promise.all", "javascript"),
      ("webpack:///./src/ui/App.tsx", 12, "render", "javascript"),
      ("node:internal/main/run_main_module", 23, None, "javascript"),
      ("/home/u/proj/src/util.js", 5, None, "javascript")],
    [("/home/u/proj/node_modules/dayjs/esm/index.js", 250, "Dayjs.format", "javascript")])

_add("browser", '''Uncaught TypeError: e is undefined
parseColor@webpack:///./src/utils/color.ts:31:7
webpack:///./src/inject/index.ts:12:3
''', [("webpack:///./src/utils/color.ts", 31, "parseColor", "javascript"),
      ("webpack:///./src/inject/index.ts", 12, None, "javascript")],
    [("webpack:///./src/utils/color.ts", 31, "parseColor", "javascript")])

_add("sanitizer", '''==4242==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010
READ of size 4 at 0x602000000010 thread T0
    #0 0x5613e8af05b8 in decUnitCompare src/decNumber/decNumber.c:6257:5
    #1 0x5613e8af1585 in jv_free /src/jq/src/jv.c:120
    #2 0x7f0e2a in __libc_start_main (/lib/x86_64-linux-gnu/libc.so.6+0x21b96)
freed by thread T0 here:
    #0 0x4a0b in free (/usr/lib/x86_64-linux-gnu/libasan.so.5+0x10d7cf)
    #1 0x5613e8 in jv_mem_free src/jv_alloc.c:30:3
''', [("src/decNumber/decNumber.c", 6257, "decUnitCompare", "sanitizer"),
      ("/src/jq/src/jv.c", 120, "jv_free", "sanitizer"),
      (None, None, "__libc_start_main", "sanitizer"),
      (None, None, "free", "sanitizer"),
      ("src/jv_alloc.c", 30, "jv_mem_free", "sanitizer")],
    [("src/decNumber/decNumber.c", 6257, "decUnitCompare", "sanitizer"), (None, None, "free", "sanitizer")])

_add("gdb", '''Program received signal SIGABRT, Aborted.
(gdb) bt
#0  0x00007ffff729da28 in __GI_raise (sig=sig@entry=6) at ../sysdeps/unix/sysv/linux/raise.c:55
#1  0x00007ffff72962d2 in __GI___assert_fail (assertion=0x7ffff7bc8c78 "jv_get_kind(n) == JV_KIND_NUMBER",
    file=0x5555 "src/jv.c", line=1234) at assert.c:101
#2  0x0000555555555189 in jv_number_value (j=...) at src/jv.c:1234
#3  fmt::operator<< <std::string, char> (writer=..., value="3479") at /home/meox/git/fmt/fmt/ostream.h:138
#4  0x00007ffff7a05b97 in start_thread () from /lib/x86_64-linux-gnu/libpthread.so.0
See #2937 for the same crash (`(default)` suffix).
''', [("../sysdeps/unix/sysv/linux/raise.c", 55, "__GI_raise", "gdb"),
      ("assert.c", 101, "__GI___assert_fail", "gdb"),
      ("src/jv.c", 1234, "jv_number_value", "gdb"),
      ("/home/meox/git/fmt/fmt/ostream.h", 138, "fmt::operator<<", "gdb"),
      (None, None, "start_thread", "gdb")],
    [("../sysdeps/unix/sysv/linux/raise.c", 55, "__GI_raise", "gdb")])
