// fingerprint() and topFrames() are pure functions run for real on realistic traces; nothing is faked.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { DEFAULT_MAX_FRAMES, FINGERPRINT_LENGTH, fingerprint, normaliseMessage, topFrames } from '../src/domain/fingerprint.js';

// ---- Traces, as the client libraries send them ----

const NODE_TYPE_ERROR = `TypeError: Cannot read properties of undefined (reading 'sku')
    at priceLine (file:///srv/shop/dist/cart/pricing.js:42:31)
    at Array.map (<anonymous>)
    at computeTotals (file:///srv/shop/dist/cart/pricing.js:18:22)
    at CartService.checkout (file:///srv/shop/dist/cart/service.js:77:19)
    at /srv/shop/node_modules/p-retry/index.js:50:18
    at async Object.checkoutHandler [as handler] (file:///srv/shop/dist/http/routes/checkout.js:25:20)
    at async Promise.all (index 0)
    at preHandlerCallback (/srv/shop/node_modules/fastify/lib/handleRequest.js:139:37)
    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)`;

const CHROME_SPA = `TypeError: Cannot read properties of null (reading 'addEventListener')
    at initCheckoutButton (https://app.example.com/static/js/main.3f2a1b9c.js?v=1042:2:18734)
    at HTMLDocument.<anonymous> (https://app.example.com/static/js/main.3f2a1b9c.js?v=1042:2:19102)
    at https://app.example.com/checkout?step=2#payment:57:9
    at Array.forEach (<anonymous>)
    at runQueue (https://app.example.com/static/js/984.7d6e5f4a.chunk.js:1:9921)
    at chrome-extension://aapbdbdomjkkjkaonfhkkikfgjllcleb/content.js:1:1`;

const FIREFOX_SPA = `initCheckoutButton@https://app.example.com/static/js/main.3f2a1b9c.js?v=1042:2:18734
setup/<@https://app.example.com/static/js/main.3f2a1b9c.js?v=1042:2:19102
EventListener.handleEvent*setup@https://app.example.com/static/js/index-BxKqfQaz.js:2:19050
forEach@[native code]
promise callback*runQueue@https://app.example.com/static/js/984.7d6e5f4a.chunk.js:1:9921
@https://app.example.com/checkout?step=2:57:9`;

// .NET 6+: async methods are shown by name; framework frames and a rethrow marker in between.
const DOTNET_CORE = `System.NullReferenceException: Object reference not set to an instance of an object.
   at MyCompany.Orders.OrderValidator.Validate(Order order) in C:\\build\\agent\\_work\\1\\s\\src\\Orders\\OrderValidator.cs:line 31
   at MyCompany.Orders.OrderService.SubmitAsync(Order order, Int32 retries) in C:\\build\\agent\\_work\\1\\s\\src\\Orders\\OrderService.cs:line 58
   at System.Runtime.ExceptionServices.ExceptionDispatchInfo.Throw()
--- End of stack trace from previous location ---
   at MyCompany.Orders.Api.OrdersController.Post(OrderDto dto) in C:\\build\\agent\\_work\\1\\s\\src\\Api\\OrdersController.cs:line 44
   at Microsoft.AspNetCore.Mvc.Infrastructure.ActionMethodExecutor.TaskOfIActionResultExecutor.Execute(IActionResultTypeMapper mapper, ObjectMethodExecutor executor, Object controller, Object[] arguments)
   at Microsoft.AspNetCore.Mvc.Infrastructure.ControllerActionInvoker.<InvokeActionMethodAsync>g__Awaited|12_0(ControllerActionInvoker invoker, ValueTask\`1 actionResultValueTask)`;

// .NET Framework 4.8, same bug: async methods appear as compiler-generated state machines.
const DOTNET_FRAMEWORK = `System.NullReferenceException: Object reference not set to an instance of an object.
   at MyCompany.Orders.OrderValidator.Validate(Order order) in D:\\src\\Orders\\OrderValidator.cs:line 29
   at MyCompany.Orders.OrderService.<SubmitAsync>d__12.MoveNext() in D:\\src\\Orders\\OrderService.cs:line 55
--- End of stack trace from previous location where exception was thrown ---
   at System.Runtime.CompilerServices.TaskAwaiter.ThrowForNonSuccess(Task task)
   at System.Runtime.CompilerServices.TaskAwaiter.HandleNonSuccessAndDebuggerNotification(Task task)
   at MyCompany.Orders.Api.OrdersController.<Post>d__4.MoveNext() in D:\\src\\Api\\OrdersController.cs:line 41`;

// A release build shipped without .pdb files: no " in file:line N", and a LINQ lambda.
const DOTNET_NO_PDB = `System.InvalidOperationException: Sequence contains no matching element
   at System.Linq.ThrowHelper.ThrowNoMatchException()
   at System.Linq.Enumerable.First[TSource](IEnumerable\`1 source, Func\`2 predicate)
   at MyCompany.Orders.PriceList.<>c__DisplayClass3_0.<PriceFor>b__0(PriceRow row)
   at MyCompany.Orders.PriceList.PriceFor(String sku)`;

// Taken in the C++ client's catch handler: its own frames first, then the app, then libc.
const CPP_TRACE = `/usr/lib/libtally.so.1(_ZN5tally6detail16captureBacktraceEv+0x2c) [0x7f3c2a1b1a2c]
/usr/lib/libtally.so.1(_ZN5tally6Client16captureExceptionERKSt9exception+0x108) [0x7f3c2a1b2c3d]
./orderd(_ZN6orders12OrderService6submitERKNS_5OrderE+0x1c4) [0x55d4c3a2b1c9]
./orderd(+0x3a1f2) [0x55d4c3a2f1f2]
./orderd(_ZN6orders3api12handleSubmitERKNS_7RequestE+0x8f) [0x55d4c3a2c04f]
./orderd(main+0x5d) [0x55d4c3a1e9ad]
/lib/x86_64-linux-gnu/libc.so.6(__libc_start_main+0xf3) [0x7f3c29e2d083]
./orderd(_start+0x2e) [0x55d4c3a1e5ae]`;

const HEX32 = /^[0-9a-f]{32}$/;
const fp = (exceptionType: string, stackTrace?: string | null, message?: string | null) => fingerprint({ exceptionType, stackTrace, message });

/** The same trace from another build or run: new line and column numbers, offsets and addresses. */
function rebuild(trace: string, seed: number): string {
  let n = seed;
  const next = () => (n = (n * 1103515245 + 12345) % 2147483648);
  return trace
    .replace(/:\d+:\d+(?=\)|$)/gm, () => `:${next() % 5000}:${next() % 200}`)
    .replace(/:line \d+/g, () => `:line ${next() % 900}`)
    .replace(/0x[0-9a-f]+/g, () => `0x${next().toString(16)}`);
}

describe('fingerprint output', () => {
  it('is lowercase hex of a fixed length, for every kind of input', () => {
    assert.equal(FINGERPRINT_LENGTH, 32);
    for (const input of [
      fp('TypeError', NODE_TYPE_ERROR),
      fp('System.NullReferenceException', DOTNET_CORE),
      fp('std::runtime_error', CPP_TRACE),
      fp('Error', null, 'boom'),
      fp('', '', ''),
    ]) {
      assert.match(input, HEX32);
    }
  });

  it('is deterministic, and pinned: a change of the rules regroups stored exceptions', () => {
    assert.equal(fp('TypeError', NODE_TYPE_ERROR), fp('TypeError', NODE_TYPE_ERROR));
    assert.equal(fp('std::runtime_error', CPP_TRACE), '88b2f81db9d954002aa2faee40e96063');
    assert.equal(fp('Error', null, 'Order 42 not found'), '978dc37cb8b68e228e7057ddba735702');
  });

  it('is the first 32 hex characters of SHA-256 over the documented basis', () => {
    const sha = (basis: unknown) => createHash('sha256').update(JSON.stringify(basis)).digest('hex').slice(0, 32);
    const frames = ['orders::OrderService::submit (orderd)', 'orders::api::handleSubmit (orderd)', 'main (orderd)', '_start (orderd)'];
    assert.equal(fp('std::runtime_error', CPP_TRACE), sha({ v: 1, type: 'std::runtime_error', frames }));
    assert.equal(fp('Error', null, 'Order 42 not found'), sha({ v: 1, type: 'Error', message: 'Order # not found' }));
  });

  it('ignores surrounding whitespace of the type, but not its case', () => {
    assert.equal(fp(' TypeError\n', NODE_TYPE_ERROR), fp('TypeError', NODE_TYPE_ERROR));
    assert.notEqual(fp('typeerror', NODE_TYPE_ERROR), fp('TypeError', NODE_TYPE_ERROR));
  });

  it('ignores the message when there is a usable stack', () => {
    assert.equal(fp('TypeError', NODE_TYPE_ERROR, "reading 'sku'"), fp('TypeError', NODE_TYPE_ERROR, "reading 'price'"));
  });
});

describe('V8 traces (Node, Chrome)', () => {
  it('keeps in-app frames: function and file, no line, column, directory, builtins or node_modules', () => {
    assert.deepEqual(topFrames(NODE_TYPE_ERROR), [
      'priceLine (pricing.js)',
      'computeTotals (pricing.js)',
      'CartService.checkout (service.js)',
      'Object.checkoutHandler (checkout.js)',
    ]);
  });

  it('strips query strings, hashes, hosts, bundle hashes and chunk ids; skips extensions', () => {
    assert.deepEqual(topFrames(CHROME_SPA), [
      'initCheckoutButton (main.js)',
      'HTMLDocument.<anonymous> (main.js)',
      '<anonymous> (checkout)',
      'runQueue (chunk.js)',
    ]);
  });

  it('reads anonymous, constructor, eval, async and aliased frames', () => {
    const trace = `Error: invalid rule
    at new RuleSet (/srv/shop/dist/rules/rule-set.js:14:11)
    at eval (eval at compileRule (/srv/shop/dist/rules/engine.js:12:9), <anonymous>:3:7)
    at Object.<anonymous> (/srv/shop/dist/main.js:5:1)
    at async Engine.run [as execute] (C:\\shop\\dist\\rules\\engine.js:40:3)
    at /srv/shop/dist/main.js:9:14
    at async file:///srv/shop/dist/boot.js:3:1`;
    assert.deepEqual(topFrames(trace, 10), [
      'new RuleSet (rule-set.js)',
      'eval (engine.js)',
      'Object.<anonymous> (main.js)',
      'Engine.run (engine.js)',
      '<anonymous> (main.js)',
      '<anonymous> (boot.js)',
    ]);
  });

  it('groups the same bug across builds: line, column, query string and bundle hash differ', () => {
    const nextBuild = rebuild(CHROME_SPA, 7).replaceAll('main.3f2a1b9c.js?v=1042', 'main.c04d19e7.js?v=1043').replace('984.7d6e5f4a', '211.0b9a8c7d');
    assert.notEqual(nextBuild, CHROME_SPA);
    assert.equal(fp('TypeError', nextBuild), fp('TypeError', CHROME_SPA));
    assert.equal(fp('TypeError', rebuild(NODE_TYPE_ERROR, 3)), fp('TypeError', NODE_TYPE_ERROR));
  });

  it('groups across deploy directories and hosts (staging and production)', () => {
    const staging = NODE_TYPE_ERROR.replaceAll('/srv/shop/', '/home/deploy/releases/20250312-1/');
    assert.equal(fp('TypeError', staging), fp('TypeError', NODE_TYPE_ERROR));
    assert.equal(fp('TypeError', CHROME_SPA.replaceAll('app.example.com', 'staging.example.com:8443')), fp('TypeError', CHROME_SPA));
  });

  it('ignores frames outside the app: changing node_modules or node:internal frames changes nothing', () => {
    const other = NODE_TYPE_ERROR.replace('p-retry/index.js', 'async-retry/lib/index.js').replace('preHandlerCallback', 'runPreParsing');
    assert.equal(fp('TypeError', other), fp('TypeError', NODE_TYPE_ERROR));
  });

  it('uses library frames when no app frame is there at all', () => {
    const trace = `Error: socket hang up
    at connResetException (node:internal/errors:720:14)
    at TLSSocket.socketOnEnd (node:_http_client:519:23)
    at /srv/shop/node_modules/undici/lib/client.js:1:2`;
    assert.deepEqual(topFrames(trace), ['connResetException (errors)', 'TLSSocket.socketOnEnd (node:_http_client)', '<anonymous> (client.js)']);
  });

  it('tells apart a different function, a different file and a different type', () => {
    const base = fp('TypeError', NODE_TYPE_ERROR);
    assert.notEqual(fp('TypeError', NODE_TYPE_ERROR.replace('at priceLine', 'at taxLine')), base);
    assert.notEqual(fp('TypeError', NODE_TYPE_ERROR.replace('cart/pricing.js:42', 'cart/discounts.js:42')), base);
    assert.notEqual(fp('RangeError', NODE_TYPE_ERROR), base);
  });
});

describe('Firefox and Safari traces', () => {
  it('reads fn@url, async causes, nested anonymous functions and native frames', () => {
    assert.deepEqual(topFrames(FIREFOX_SPA), [
      'initCheckoutButton (main.js)',
      'setup/< (main.js)',
      'setup (index.js)',
      'runQueue (chunk.js)',
      '<anonymous> (checkout)',
    ]);
  });

  it('reads Safari global code and Firefox eval frames', () => {
    const trace = `validate@https://app.example.com/static/js/main.3f2a1b9c.js:2:1200
rule@https://app.example.com/static/js/main.3f2a1b9c.js line 2 > eval:1:5
global code@https://app.example.com/checkout:57:9`;
    assert.deepEqual(topFrames(trace), ['validate (main.js)', 'rule (main.js)', 'global code (checkout)']);
  });

  it('groups the same bug across builds', () => {
    const nextBuild = rebuild(FIREFOX_SPA, 11).replaceAll('3f2a1b9c.js?v=1042', '9e8d7c6b.js?v=1043').replace('BxKqfQaz', 'Dk3_pQzW');
    assert.equal(fp('TypeError', nextBuild), fp('TypeError', FIREFOX_SPA));
    assert.notEqual(fp('TypeError', FIREFOX_SPA.replace('initCheckoutButton@', 'initCartButton@')), fp('TypeError', FIREFOX_SPA));
  });
});

describe('.NET traces', () => {
  it('keeps Namespace.Type.Method of app frames; drops arguments, files, framework frames and markers', () => {
    assert.deepEqual(topFrames(DOTNET_CORE), [
      'MyCompany.Orders.OrderValidator.Validate',
      'MyCompany.Orders.OrderService.SubmitAsync',
      'MyCompany.Orders.Api.OrdersController.Post',
    ]);
  });

  it('reads async state machines as the method they belong to: .NET Framework and .NET 6 agree', () => {
    assert.deepEqual(topFrames(DOTNET_FRAMEWORK), topFrames(DOTNET_CORE));
    assert.equal(fp('System.NullReferenceException', DOTNET_FRAMEWORK), fp('System.NullReferenceException', DOTNET_CORE));
  });

  it('reads frames without " in file:line", generic methods and lambdas', () => {
    assert.deepEqual(topFrames(DOTNET_NO_PDB), ['MyCompany.Orders.PriceList.<>c__DisplayClass_.<PriceFor>b__', 'MyCompany.Orders.PriceList.PriceFor']);
  });

  it('reads Mono frames (Unity, Xamarin) the same way', () => {
    const mono = `System.NullReferenceException: Object reference not set to an instance of an object
  at MyCompany.Orders.OrderValidator.Validate (MyCompany.Orders.Order order) [0x0001b] in /Users/ci/src/Orders/OrderValidator.cs:29
  at MyCompany.Orders.OrderService.Submit (MyCompany.Orders.Order order) <0x10a2b3c40 + 0x0004f> in <filename unknown>:0
  at System.Threading.Tasks.Task.Execute () [0x00010] in <b0e2c7a5f8d94e1c9a7f6e5d4c3b2a19>:0`;
    assert.deepEqual(topFrames(mono), ['MyCompany.Orders.OrderValidator.Validate', 'MyCompany.Orders.OrderService.Submit']);
    assert.equal(fp('System.NullReferenceException', rebuild(mono, 4)), fp('System.NullReferenceException', mono));
  });

  it('groups the same bug across builds, with or without pdb files', () => {
    assert.equal(fp('System.NullReferenceException', rebuild(DOTNET_CORE, 5)), fp('System.NullReferenceException', DOTNET_CORE));
    const withPdb = DOTNET_NO_PDB.replace('(String sku)', '(String sku) in C:\\src\\Orders\\PriceList.cs:line 88').replace(
      'DisplayClass3_0',
      'DisplayClass4_0',
    );
    assert.equal(fp('System.InvalidOperationException', withPdb), fp('System.InvalidOperationException', DOTNET_NO_PDB));
  });

  it('ignores renamed parameters and changed framework frames, but not a different method', () => {
    const base = fp('System.NullReferenceException', DOTNET_CORE);
    assert.equal(fp('System.NullReferenceException', DOTNET_CORE.replace('Validate(Order order)', 'Validate(Order o)')), base);
    assert.equal(
      fp('System.NullReferenceException', DOTNET_CORE.replace('ExceptionDispatchInfo.Throw()', 'ExceptionDispatchInfo.Capture(Exception source)')),
      base,
    );
    assert.notEqual(fp('System.NullReferenceException', DOTNET_CORE.replace('OrderValidator.Validate', 'OrderValidator.Check')), base);
    assert.notEqual(fp('System.ArgumentNullException', DOTNET_CORE), base);
  });
});

describe('C++ traces (glibc backtrace_symbols)', () => {
  it('skips the client library frames, unsymbolised app frames and libc; demangles plain names', () => {
    assert.deepEqual(topFrames(CPP_TRACE), ['orders::OrderService::submit (orderd)', 'orders::api::handleSubmit (orderd)', 'main (orderd)', '_start (orderd)']);
  });

  it('groups the same bug across runs and builds: addresses and offsets differ', () => {
    assert.notEqual(rebuild(CPP_TRACE, 13), CPP_TRACE);
    assert.equal(fp('std::out_of_range', rebuild(CPP_TRACE, 13)), fp('std::out_of_range', CPP_TRACE));
  });

  it('is not changed by another version of the client library with other frames of its own', () => {
    const lines = CPP_TRACE.split('\n');
    const newerClient = [
      '/opt/tally/lib/libtally.so.2.1.0(_ZN5tally6detail9Backtrace7captureEv+0x31) [0x7f11a0c01231]',
      '/opt/tally/lib/libtally.so.2.1.0(_ZN5tally6detail16captureBacktraceEv+0x2c) [0x7f11a0c01a2c]',
      '/opt/tally/lib/libtally.so.2.1.0(_ZN5tally6Client16captureExceptionERKSt9exceptionRKNS_7ContextE+0x1f4) [0x7f11a0c02c3d]',
      ...lines.slice(2),
    ].join('\n');
    assert.equal(fp('std::out_of_range', newerClient), fp('std::out_of_range', CPP_TRACE));
  });

  it('never uses the leading client frames, even when only system libraries are left', () => {
    const trace = `/usr/lib/libtally.so.1(_ZN5tally6Client16captureExceptionERKSt9exception+0x108) [0x7f3c2a1b2c3d]
/lib/x86_64-linux-gnu/libstdc++.so.6(_ZSt24__throw_out_of_range_fmtPKcz+0x5a) [0x7f3c29f0a12a]
/lib/x86_64-linux-gnu/libc.so.6(__libc_start_main+0xf3) [0x7f3c29e2d083]`;
    assert.deepEqual(topFrames(trace), ['std::__throw_out_of_range_fmt (libstdc++.so)', '__libc_start_main (libc.so)']);
    const newerClient = trace.replace(
      'libtally.so.1(_ZN5tally6Client16captureExceptionERKSt9exception',
      'libtally.so.2(_ZN5tally6Client7captureERKSt9exception',
    );
    assert.equal(fp('std::out_of_range', newerClient), fp('std::out_of_range', trace));
  });

  it('skips a statically linked client by its tally:: namespace', () => {
    const staticClient = CPP_TRACE.replaceAll('/usr/lib/libtally.so.1(', './orderd(');
    assert.deepEqual(topFrames(staticClient), topFrames(CPP_TRACE));
  });

  it('tells apart a different function and a different type', () => {
    const base = fp('std::out_of_range', CPP_TRACE);
    assert.notEqual(fp('std::out_of_range', CPP_TRACE.replace('6submitERKNS_5OrderE', '6cancelERKNS_5OrderE')), base);
    assert.notEqual(fp('std::bad_alloc', CPP_TRACE), base);
  });

  it('reads const methods, constructors, destructors, clone suffixes and drops library versions', () => {
    const trace = `./orderd(_ZNK6orders5Order5totalEv.cold+0x12) [0x55d4c3a2c04f]
./orderd(_ZN6orders5OrderC2ERKS0_+0x40) [0x55d4c3a2c14f]
./orderd(_ZN6orders5OrderD1Ev+0x18) [0x55d4c3a2c24f]
/usr/lib/x86_64-linux-gnu/libpricing.so.3.2(_ZN7pricing5priceEv+0x10) [0x7f3c2a000010]`;
    assert.deepEqual(topFrames(trace), [
      'orders::Order::total (orderd)',
      'orders::Order::Order (orderd)',
      'orders::Order::~Order (orderd)',
      'pricing::price (libpricing.so)',
    ]);
  });

  it('keeps a mangled name it cannot demangle simply, without digits, so it stays stable', () => {
    const trace = './orderd(_ZN6orders5QueueIiE4pushEi+0x2a) [0x55d4c3a2c04f]';
    assert.deepEqual(topFrames(trace), ['_ZNordersQueueIiEpushEi (orderd)']);
    assert.equal(fp('std::length_error', rebuild(trace, 2)), fp('std::length_error', trace));
  });

  it('falls back to module-only frames when no app frame has a symbol', () => {
    const trace = `/usr/lib/libtally.so.1(_ZN5tally6Client16captureExceptionERKSt9exception+0x108) [0x7f3c2a1b2c3d]
./orderd(+0x3a1f2) [0x55d4c3a2f1f2]
./orderd() [0x55d4c3a2f3a0]
/lib/x86_64-linux-gnu/libc.so.6(__libc_start_main+0xf3) [0x7f3c29e2d083]`;
    assert.deepEqual(topFrames(trace), ['? (orderd)', '? (orderd)']);
    assert.equal(fp('std::runtime_error', rebuild(trace, 9)), fp('std::runtime_error', trace));
  });
});

describe('message fallback', () => {
  const type = 'OrderNotFoundException';

  it('uses the type and normalised message when the stack is absent, empty or unreadable', () => {
    const expected = fp(type, undefined, 'Order 42 not found');
    for (const stack of [null, undefined, '', '   \n\t', 'no stack available', 'OrderNotFoundException: Order 42 not found', '\u0000\uffff(((( [0xzz]']) {
      assert.equal(fp(type, stack, 'Order 42 not found'), expected, JSON.stringify(stack));
    }
  });

  it('groups messages that differ only in numbers, hex, UUIDs or whitespace', () => {
    const base = fp(type, null, "Order 42 for customer 'acme' not found after 3 retries");
    assert.equal(fp(type, null, "Order 9917 for customer 'acme' not found after 5 retries"), base);
    assert.equal(fp(type, null, "Order  0x7ffe12ab for customer 'acme'\nnot found after 12 retries"), base);
    assert.equal(fp(type, null, "Order 550e8400-e29b-41d4-a716-446655440000 for customer 'acme' not found after 1 retries"), base);
  });

  it('tells apart different words, different quoted values and a different type', () => {
    const base = fp(type, null, "Order 42 for customer 'acme' not found");
    assert.notEqual(fp(type, null, "Order 42 for customer 'globex' not found"), base);
    assert.notEqual(fp(type, null, 'Order 42 was cancelled'), base);
    assert.notEqual(fp('KeyNotFoundException', null, "Order 42 for customer 'acme' not found"), base);
  });

  it('treats a missing and an empty message alike, and apart from a stack-based fingerprint', () => {
    assert.equal(fp(type, null, null), fp(type, null, ''));
    assert.equal(fp(type, null, undefined), fp(type, null, '  '));
    assert.notEqual(fp(type, NODE_TYPE_ERROR), fp(type, null, null));
  });

  it('normalises messages as documented', () => {
    assert.equal(
      normaliseMessage("Order 550e8400-e29b-41d4-a716-446655440000 failed at 0x7ffe12ab:  3.14 'sku' user42 deadbeef"),
      "Order # failed at #: #.# 'sku' # #",
    );
  });
});

describe('topFrames', () => {
  it('keeps the top five frames by default, and honours max', () => {
    assert.equal(DEFAULT_MAX_FRAMES, 5);
    const deep = Array.from({ length: 12 }, (_, i) => `    at step${'abcdefghijkl'[i]} (/srv/app/dist/flow.js:${i + 1}:1)`).join('\n');
    assert.deepEqual(topFrames(deep), ['stepa (flow.js)', 'stepb (flow.js)', 'stepc (flow.js)', 'stepd (flow.js)', 'stepe (flow.js)']);
    assert.deepEqual(topFrames(deep, 2), ['stepa (flow.js)', 'stepb (flow.js)']);
    assert.deepEqual(topFrames(deep, 0), []);
  });

  it('changes beyond the top frames do not change the fingerprint', () => {
    const deep = (tail: string) =>
      `Error: x\n${['a', 'b', 'c', 'd', 'e'].map((f) => `    at ${f} (/srv/app/dist/flow.js:1:1)`).join('\n')}\n    at ${tail} (/srv/app/dist/main.js:1:1)`;
    assert.equal(fp('Error', deep('start')), fp('Error', deep('boot')));
  });

  it('copes with Windows line endings and pathological input in reasonable time', () => {
    assert.deepEqual(topFrames(NODE_TYPE_ERROR.replaceAll('\n', '\r\n')), topFrames(NODE_TYPE_ERROR));
    const started = Date.now();
    topFrames('at ' + '('.repeat(32_000) + ' [0x1]');
    topFrames(`${'x('.repeat(1_000)}) [0x1]\n`.repeat(16));
    topFrames(`at ${'a ('.repeat(650)})`);
    normaliseMessage('a'.repeat(100_000));
    assert.ok(Date.now() - started < 1_000);
  });

  it('property: any line numbers, columns, offsets and addresses give the same fingerprint', () => {
    const traces: [string, string][] = [
      ['TypeError', NODE_TYPE_ERROR],
      ['TypeError', CHROME_SPA],
      ['TypeError', FIREFOX_SPA],
      ['System.NullReferenceException', DOTNET_CORE],
      ['std::out_of_range', CPP_TRACE],
    ];
    fc.assert(
      fc.property(fc.constantFrom(...traces), fc.integer({ min: 1, max: 2 ** 30 }), ([type, trace], seed) => {
        assert.equal(fp(type, rebuild(trace, seed)), fp(type, trace));
      }),
    );
  });
});
