import { lauxlib, lua, to_luastring, type LuaState } from 'fengari';

/**
 * Places where src/lua reads fengari 0.1.5's JS objects rather than its Lua
 * API: two for speed, and one (dropMessageHandler) because the API cannot
 * raise past a message handler. Each checks the shape it expects and does
 * nothing (or answers conservatively) when it finds another. chunk-shape.ts
 * is one more such place. The Lua worker's watchdog bounds a run whatever
 * these find.
 *
 * `fengariShapeProblem` checks those shapes once per thread, on a throwaway
 * state; when one differs, each shortcut taken for speed takes its Lua-API path from the
 * start (the chunk re-runs its top level per request, a table's emptiness
 * costs a `next`), and the gateway logs one WARN (src/plugins/scripting/lua-node.ts).
 */

interface StateShape {
  stack?: unknown;
  top?: unknown;
  stack_last?: unknown;
  ci?: { top?: unknown } | null;
  base_ci?: unknown;
  errfunc?: unknown;
}

/** What differs from fengari 0.1.5's private objects on a fresh state, or undefined. */
function probeShapes(): string | undefined {
  try {
    const L = lauxlib.luaL_newstate();
    const state = L as unknown as StateShape;
    // Tests: the probe meets a state without `errfunc`, as a fengari that renamed it would show.
    if ((process.env['SWITCHYARD_STUB_INTERNALS'] ?? '').split(',').includes('fengari')) delete state.errfunc;
    if (!Array.isArray(state.stack)) return 'lua_State.stack is not an array';
    if (typeof state.top !== 'number' || typeof state.stack_last !== 'number')
      return 'lua_State.top or stack_last is not a number';
    if (state.ci !== state.base_ci || typeof state.ci?.top !== 'number') return 'lua_State.ci is not base_ci';
    if (typeof state.errfunc !== 'number') return 'lua_State.errfunc is not a number';
    lua.lua_createtable(L, 0, 0);
    const entries = (lua.lua_topointer(L, -1) as { strong?: unknown } | null)?.strong;
    if (!(entries instanceof Map)) return 'a table keeps no `strong` Map';
    const before = entries.size;
    lua.lua_pushinteger(L, 1);
    lua.lua_setfield(L, -2, 'k');
    if (before !== 0 || entries.size !== 1) return "a table's `strong` Map does not hold its entries";
    lua.lua_pop(L, 1);
    if (lauxlib.luaL_loadstring(L, to_luastring('local a = 1 return function() return a end')) !== lua.LUA_OK)
      return 'the probe chunk did not compile';
    const main = (lua.lua_topointer(L, -1) as { p?: unknown } | null)?.p as
      { code?: unknown; p?: unknown; upvalues?: unknown } | undefined;
    if (!Array.isArray(main?.code) || !Array.isArray(main.p) || !Array.isArray(main.upvalues))
      return 'a Lua closure keeps no prototype `p` with code, p and upvalues';
    const first = main.code[0] as { opcode?: unknown; B?: unknown } | undefined;
    if (typeof first?.opcode !== 'number' || typeof first.B !== 'number')
      return 'an instruction has no numeric opcode and B';
    const child = main.p[0] as { upvalues?: unknown } | undefined;
    const upvalue = Array.isArray(child?.upvalues)
      ? (child.upvalues[0] as { instack?: unknown; idx?: unknown } | undefined)
      : undefined;
    if (typeof upvalue?.instack !== 'boolean' || typeof upvalue.idx !== 'number')
      return 'an upvalue description has no instack and idx';
    return undefined;
  } catch (err) {
    return `the probe failed: ${String(err)}`;
  }
}

let problem: string | undefined | null = null;

/** Why the shortcuts into fengari's private objects are off in this thread, or undefined when they are on. */
export function fengariShapeProblem(): string | undefined {
  if (problem === null) problem = probeShapes();
  return problem;
}

/** A stack length V8 keeps as a fast array however many slots are empty (its sparseness check starts above 64). */
const FAST_STACK_LENGTH = 60;

/**
 * fengari keeps a thread's stack in a JS array, deletes the slots it pops and
 * grows the array by setting its length. Once the array is longer than V8's
 * sparseness threshold and mostly holes, V8 turns it into a dictionary and
 * every push and pop of every call gets several times slower. The sandbox
 * setup alone grows the stack to 80, so between calls (nothing on the stack,
 * no call in progress) the stack goes back to a fresh array of
 * FAST_STACK_LENGTH when it has grown. A state of another shape is left alone.
 */
export function compactStack(L: LuaState): void {
  if (fengariShapeProblem() !== undefined) return;
  const state = L as unknown as StateShape;
  const stack = state.stack;
  if (!Array.isArray(stack) || stack.length <= FAST_STACK_LENGTH) return;
  const { top, stack_last: last } = state;
  if (typeof top !== 'number' || typeof last !== 'number' || top > 1 || state.ci !== state.base_ci) return;
  const extra = stack.length - last;
  if (extra < 0 || extra >= FAST_STACK_LENGTH / 2) return;
  const fresh: unknown[] = new Array(FAST_STACK_LENGTH);
  for (let i = 0; i < top; i++) fresh[i] = stack[i];
  const newLast = FAST_STACK_LENGTH - extra;
  state.stack = fresh;
  state.stack_last = newLast;
  const ci = state.ci;
  if (ci !== null && ci !== undefined && typeof ci.top === 'number' && ci.top > newLast) ci.top = newLast;
}

/**
 * A check that the table at `idx` is empty without a Lua API call: fengari
 * 0.1.5 keeps a table's live entries in a Map named `strong`. Any other shape
 * answers "not empty", which only costs a `next` in the caller.
 */
export function emptinessProbe(L: LuaState, idx: number): () => boolean {
  if (fengariShapeProblem() !== undefined) return () => false;
  const entries = (lua.lua_topointer(L, idx) as { strong?: unknown } | null)?.strong;
  return entries instanceof Map ? () => entries.size === 0 : () => false;
}

/**
 * Clears the thread's message handler (fengari 0.1.5 keeps it in
 * `L.errfunc`), so the error about to be raised goes straight to the
 * enclosing protected call. `lua_pcall` restores the field when it returns,
 * so only the error raised now skips the handler. A state of another shape
 * is left alone.
 */
export function dropMessageHandler(L: LuaState): void {
  const state = L as unknown as { errfunc?: unknown };
  if (typeof state.errfunc === 'number') state.errfunc = 0;
}
