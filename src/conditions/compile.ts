import { ConfigError } from '../core/plugin.js';
import type { Evaluation } from './evaluation.js';
import { JsonPathSyntaxError } from './jsonpath.js';
import {
  BINARY_OPERATORS,
  compileBinary,
  compileUnary,
  OPERATOR_NAMES,
  UNARY_OPERATORS,
} from './operators.js';
import { parseSubject, type Subject } from './subjects.js';

/** A compiled rule or group. */
export type Test = (evaluation: Evaluation) => boolean;

type Logic = 'and' | 'or' | 'not' | '!and' | '!or';

const LOGIC: ReadonlySet<string> = new Set<Logic>(['and', 'or', 'not', '!and', '!or']);

/** Compiles expressions, remembering which bodies their subjects read. */
export class ExpressionCompiler {
  readsRequestBody = false;
  readsResponseBody = false;

  /** One expression: rules ANDed, or a single group written at the top (`["OR", …]`). */
  expression(expr: unknown, key: string): Test {
    if (!Array.isArray(expr)) throw new ConfigError(key, 'must be an array of rules');
    const items = expr as unknown[];
    const head = items[0];
    if (typeof head === 'string') {
      if (LOGIC.has(head.toLowerCase())) return this.#group(items, head.toLowerCase() as Logic, key);
      throw new ConfigError(
        key,
        'must be an array of rules; wrap a single rule in another array: [[subject, op, value]]',
      );
    }
    return all(items.map((item, i) => this.#node(item, `${key}[${i}]`)));
  }

  #node(value: unknown, key: string): Test {
    if (!Array.isArray(value))
      throw new ConfigError(key, 'must be a rule [subject, op, value] or a group ["AND"|"OR"|"NOT", …]');
    const items = value as unknown[];
    if (items.length === 0) throw new ConfigError(key, 'is empty; a rule is [subject, op, value]');
    const head = items[0];
    if (typeof head !== 'string' || head === '') {
      throw new ConfigError(`${key}[0]`, 'must be a subject (variable name or JSONPath) or AND, OR, NOT');
    }
    const logic = head.toLowerCase();
    if (LOGIC.has(logic)) return this.#group(items, logic as Logic, key);
    return this.#rule(head, items, key);
  }

  #group(items: unknown[], logic: Logic, key: string): Test {
    const children = items.slice(1).map((child, i) => this.#node(child, `${key}[${i + 1}]`));
    switch (logic) {
      case 'and':
        return all(children);
      case 'or':
        return any(children);
      case '!and': {
        const test = all(children);
        return (e) => !test(e);
      }
      case '!or': {
        const test = any(children);
        return (e) => !test(e);
      }
      case 'not': {
        const [only] = children;
        if (only === undefined || children.length !== 1) {
          throw new ConfigError(key, '`NOT` takes exactly one rule or group');
        }
        return (e) => !only(e);
      }
    }
  }

  #rule(subjectText: string, items: unknown[], key: string): Test {
    const subject = this.#subject(subjectText, `${key}[0]`);
    const negate = items[1] === '!';
    const opIndex = negate ? 2 : 1;
    const opKey = `${key}[${opIndex}]`;
    const op = items[opIndex];
    if (op === undefined) throw new ConfigError(key, 'is missing an operator: [subject, op, value]');
    if (typeof op !== 'string' || !(BINARY_OPERATORS.has(op) || UNARY_OPERATORS.has(op))) {
      const shown = typeof op === 'string' ? `\`${op}\`` : JSON.stringify(op);
      throw new ConfigError(opKey, `unknown operator ${shown}; expected one of ${OPERATOR_NAMES.join(' ')}`);
    }
    const valueIndex = opIndex + 1;
    let operator;
    if (UNARY_OPERATORS.has(op)) {
      if (items.length > valueIndex)
        throw new ConfigError(`${key}[${valueIndex}]`, `\`${op}\` takes no value`);
      if (op === 'is_null' && subject.kind === 'flat') {
        throw new ConfigError(
          opKey,
          '`is_null` needs a JSONPath subject; a variable is never null (use `absent`)',
        );
      }
      operator = compileUnary(op);
    } else {
      if (items.length <= valueIndex)
        throw new ConfigError(key, `\`${op}\` needs a value: [subject, "${op}", value]`);
      if (items.length > valueIndex + 1) {
        throw new ConfigError(
          `${key}[${valueIndex + 1}]`,
          'is one element too many: a rule is [subject, op, value]',
        );
      }
      operator = compileBinary(op, items[valueIndex], `${key}[${valueIndex}]`);
    }
    const test: Test =
      subject.kind === 'flat' ? (e) => operator.flat(subject, e.ctx) : (e) => operator.json(e.nodes(subject));
    return negate ? (e) => !test(e) : test;
  }

  #subject(text: string, key: string): Subject {
    let subject: Subject;
    try {
      subject = parseSubject(text);
    } catch (error) {
      if (error instanceof JsonPathSyntaxError) {
        throw new ConfigError(key, `invalid JSONPath \`${text}\`: ${error.message}`);
      }
      throw error;
    }
    const body = subject.kind === 'flat' ? subject.body : subject.target;
    if (body === 'request') this.readsRequestBody = true;
    else if (body === 'response') this.readsResponseBody = true;
    return subject;
  }
}

export function all(tests: readonly Test[]): Test {
  if (tests.length === 1 && tests[0] !== undefined) return tests[0];
  return (e) => {
    for (const test of tests) if (!test(e)) return false;
    return true;
  };
}

export function any(tests: readonly Test[]): Test {
  return (e) => {
    for (const test of tests) if (test(e)) return true;
    return false;
  };
}
