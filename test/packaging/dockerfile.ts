import { readFileSync } from 'node:fs';

/** One instruction of a Dockerfile: `RUN`, `COPY`… with its arguments, continuation lines joined. */
export interface Instruction {
  keyword: string;
  args: string;
}

export interface Stage {
  from: string;
  name: string | undefined;
  instructions: Instruction[];
}

/** The stages of a Dockerfile (the subset of the syntax this repository's Dockerfile uses). */
export function parseDockerfile(path: string): Stage[] {
  const lines = readFileSync(path, 'utf8').split('\n');
  const joined: string[] = [];
  let pending = '';
  for (const raw of lines) {
    const line = raw.trim();
    if (pending === '' && (line === '' || line.startsWith('#'))) continue;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    joined.push(pending + line);
    pending = '';
  }
  const stages: Stage[] = [];
  for (const line of joined) {
    const [keyword = '', ...rest] = line.split(/\s+/);
    const args = rest.join(' ');
    if (keyword.toUpperCase() === 'FROM') {
      const [from = '', as, name] = args.split(/\s+/);
      stages.push({ from, name: as?.toUpperCase() === 'AS' ? name : undefined, instructions: [] });
    } else {
      stages.at(-1)?.instructions.push({ keyword: keyword.toUpperCase(), args });
    }
  }
  return stages;
}

/** The JSON-array form of CMD/ENTRYPOINT/HEALTHCHECK CMD as argv. */
export function execForm(args: string): string[] {
  const json = args.slice(args.indexOf('['));
  return JSON.parse(json) as string[];
}
