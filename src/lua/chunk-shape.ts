import { lua, type LuaState } from 'fengari';
import { fengariShapeProblem } from './fengari-internals.js';

/**
 * Decides from a compiled chunk's bytecode whether its top level may run
 * once per program instead of once per request without any request seeing
 * another's state.
 *
 * That holds when the top level is straight-line code that only reads
 * values, makes closures and assigns globals (no calls, no loops, no tables
 * it could later mutate), and no function it defines can assign a local or
 * upvalue of the top level. Its result is then the same every time it runs,
 * and what a request could change lives in tables the program resets after
 * every call (see LuaProgram).
 *
 * It reads fengari's compiled prototype (`LClosure.p`), which has no public
 * API; if that shape is not what 0.1.5 has, the answer is "no" and the
 * program keeps re-running the top level per request; so it does when the
 * start-up probe of fengari's shapes failed (fengari-internals.ts).
 */

/** Lua 5.3 opcodes, as numbered by lopcodes.h. */
const OP = {
  MOVE: 0,
  LOADK: 1,
  LOADKX: 2,
  LOADBOOL: 3,
  LOADNIL: 4,
  GETUPVAL: 5,
  GETTABUP: 6,
  GETTABLE: 7,
  SETTABUP: 8,
  SETUPVAL: 9,
  RETURN: 38,
  CLOSURE: 44,
  VARARG: 45,
  EXTRAARG: 46,
} as const;

/** What the top level may do: load values, read tables, build closures, assign globals. */
const TOP_LEVEL_OPS = new Set<number>([
  OP.MOVE,
  OP.LOADK,
  OP.LOADKX,
  OP.LOADBOOL,
  OP.LOADNIL,
  OP.GETUPVAL,
  OP.GETTABUP,
  OP.GETTABLE,
  OP.SETTABUP,
  OP.RETURN,
  OP.CLOSURE,
  OP.VARARG,
  OP.EXTRAARG,
]);

interface Instruction {
  opcode: number;
  B: number;
}
interface UpvalueDesc {
  instack: boolean;
  idx: number;
}
interface Proto {
  code: Instruction[];
  p: Proto[];
  upvalues: UpvalueDesc[];
}

function isProto(value: unknown): value is Proto {
  if (typeof value !== 'object' || value === null) return false;
  const p = value as Partial<Proto>;
  return Array.isArray(p.code) && Array.isArray(p.p) && Array.isArray(p.upvalues);
}

/** True when the Lua function at `idx` (a freshly loaded chunk) has a static top level. */
export function hasStaticTopLevel(L: LuaState, idx: number): boolean {
  if (fengariShapeProblem() !== undefined) return false;
  if (lua.lua_type(L, idx) !== lua.LUA_TFUNCTION) return false;
  const main = (lua.lua_topointer(L, idx) as { p?: unknown } | null)?.p;
  if (!isProto(main)) return false;
  for (const ins of main.code) {
    if (typeof ins !== 'object' || !TOP_LEVEL_OPS.has(ins.opcode)) return false;
  }
  // Every upvalue of a function defined at the top level is top-level
  // storage: a top-level local (in stack) or the top level's own _ENV.
  return main.p.every(
    (child) =>
      isProto(child) &&
      neverAssignsTopLevel(
        child,
        child.upvalues.map(() => true),
      ),
  );
}

/**
 * True when neither `proto` nor any function nested in it assigns an upvalue
 * that is top-level storage; `topLevel[i]` tells whether upvalue `i` of
 * `proto` is.
 */
function neverAssignsTopLevel(proto: Proto, topLevel: readonly boolean[]): boolean {
  for (const ins of proto.code) {
    if (typeof ins !== 'object') return false;
    if (ins.opcode === OP.SETUPVAL && topLevel[ins.B] !== false) return false;
  }
  return proto.p.every(
    (child) =>
      isProto(child) &&
      neverAssignsTopLevel(
        child,
        // A nested function's upvalue is top-level storage only when it
        // captures (not in stack) an upvalue of its parent that is.
        child.upvalues.map((u) => !u.instack && topLevel[u.idx] === true),
      ),
  );
}
