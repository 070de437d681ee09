import { Enforcer, Helper, newModelFromString, type Model } from 'casbin';
import { compileRegex, type ConfigRegex } from '../../conditions/regex.js';

/** A model or policy problem found while compiling; `field` names the config key it came from. */
export class CasbinSourceError extends Error {
  constructor(
    readonly field: 'model' | 'policy',
    message: string,
  ) {
    super(message);
    this.name = 'CasbinSourceError';
  }
}

/**
 * Builds a ready enforcer for `(subject, object, action)` requests from model
 * and policy text, without an adapter.
 * casbin's own loaders are async (they await the adapter and the role
 * manager); a node is created synchronously, so the policy lines and role
 * links are loaded here directly, checked line by line on the way.
 */
export function compileEnforcer(modelText: string, policyText: string): Enforcer {
  let model: Model;
  try {
    model = newModelFromString(modelText);
  } catch (err) {
    throw new CasbinSourceError('model', `invalid Casbin model: ${(err as Error).message}`);
  }
  for (const section of ['r', 'p', 'e', 'm']) {
    if (model.model.get(section)?.get(section) === undefined) {
      throw new CasbinSourceError('model', `invalid Casbin model: missing the '${section}' definition`);
    }
  }
  const request = model.model.get('r')?.get('r')?.tokens.length;
  if (request !== 3) {
    throw new CasbinSourceError(
      'model',
      `the request_definition must have three fields (subject, object, action), not ${request}`,
    );
  }

  const enforcer = new Enforcer();
  useLinearRegexMatch(enforcer);
  enforcer.setModel(model);
  enforcer.initRmMap();
  loadPolicy(model, policyText);
  enforcer.sortPolicies();
  model.sortPoliciesBySubjectHierarchy();
  buildRoleLinks(enforcer, model);
  return enforcer;
}

function loadPolicy(model: Model, policyText: string): void {
  policyText.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const ptype = line.slice(0, line.indexOf(',') === -1 ? line.length : line.indexOf(',')).trim();
    const assertion = model.model.get(ptype.slice(0, 1))?.get(ptype);
    if (assertion === undefined) {
      throw new CasbinSourceError('policy', `line ${index + 1}: the model defines no '${ptype}'`);
    }
    const before = assertion.policy.length;
    Helper.loadPolicyLine(line, model);
    const rule = assertion.policy[before];
    if (rule === undefined) throw new CasbinSourceError('policy', `line ${index + 1}: cannot be parsed`);
    const expected = ptype.startsWith('g') ? roleArity(assertion.value) : assertion.tokens.length;
    const enough = ptype.startsWith('g') ? rule.length >= expected : rule.length === expected;
    if (!enough) {
      throw new CasbinSourceError(
        'policy',
        `line ${index + 1}: '${ptype}' takes ${expected} values, the line has ${rule.length}`,
      );
    }
  });
}

/** `g = _, _` takes two names, `g = _, _, _` two names and a domain. */
function roleArity(definition: string): number {
  return (definition.match(/_/g) ?? []).length;
}

/**
 * casbin's `buildRoleLinks` awaits the role manager; the default role manager
 * does its work before its first await, so adding the links here leaves the
 * enforcer complete when this returns.
 */
function buildRoleLinks(enforcer: Enforcer, model: Model): void {
  for (const [ptype, assertion] of model.model.get('g') ?? []) {
    const manager = enforcer.getNamedRoleManager(ptype);
    if (manager === undefined) continue;
    const arity = roleArity(assertion.value);
    if (arity < 2 || arity > 3) {
      throw new CasbinSourceError('model', `role definition '${ptype}' must have 2 or 3 '_' fields`);
    }
    assertion.rm = manager;
    for (const rule of assertion.policy) {
      const [user = '', role = '', ...domain] = rule.slice(0, arity);
      void manager.addLink(user, role, ...domain);
    }
  }
}

/** Patterns regexMatch compiled, per enforcer; bounded because a matcher may pass request text as the pattern. */
const MAX_CACHED_PATTERNS = 1000;

/**
 * casbin's built-in `regexMatch` compiles its second argument with a
 * backtracking RegExp on every call; a policy line such as `^/(a+)+$` would
 * then stall the event loop. Swap it for the linear-time engine every other
 * config regex runs on (docs/conditions.md#regular-expressions).
 */
function useLinearRegexMatch(enforcer: Enforcer): void {
  const cache = new Map<string, ConfigRegex | null>();
  const regexMatch = (...args: unknown[]): boolean => {
    const [subject, pattern] = args.map((a) =>
      typeof a === 'string' ? a : a == null ? '' : JSON.stringify(a),
    );
    let re = cache.get(pattern!);
    if (re === undefined) {
      try {
        re = compileRegex(pattern!, 'regexMatch');
      } catch {
        re = null;
      }
      if (cache.size >= MAX_CACHED_PATTERNS) cache.clear();
      cache.set(pattern!, re);
    }
    return re !== null && re.test(subject!);
  };
  // FunctionMap.addFunction keeps an existing entry, so replace the built-in in place.
  (enforcer as unknown as { fm: { getFunctions(): Map<string, unknown> } }).fm
    .getFunctions()
    .set('regexMatch', regexMatch);
}
