import { useState } from 'react';
import { ApiError, describe, itemPath, postJson, put } from '../api.js';
import type { PolicyValidation } from '../types.js';
import { locate } from './issues.js';
import type { PolicyGraph } from './use-policy-graph.js';

export interface Banner {
  kind: 'ok' | 'error' | 'conflict';
  text: string;
}

export interface Publish {
  banner: Banner | undefined;
  setBanner: (banner: Banner | undefined) => void;
  busy: boolean;
  validate: () => Promise<void>;
  save: (overwrite?: boolean) => Promise<void>;
  /** Drops the edits and loads the stored version (after a conflict). */
  reload: () => void;
}

/** Validate and Save against the Admin API, with the banner that reports how they went. */
export function usePublish(g: PolicyGraph, noun: string): Publish {
  const [banner, setBanner] = useState<Banner | undefined>();
  const [busy, setBusy] = useState(false);
  const { name, kind } = g;

  const validate = async () => {
    const policy = g.current();
    setBusy(true);
    try {
      const result = await postJson<PolicyValidation>('/api/policies/validate', policy);
      const problems =
        result.details.length > 0 ? result.details : result.errors.map((message) => ({ path: '', message }));
      g.setIssues(result.valid ? [] : locate(problems, policy.nodes));
      g.setWarnings(result.warnings);
      setBanner(
        result.valid
          ? { kind: 'ok', text: 'Valid: the gateway would accept this policy.' }
          : { kind: 'error', text: `Not valid: ${problems.length} problem(s), listed on the right.` },
      );
    } catch (err) {
      setBanner({ kind: 'error', text: `Validation failed: ${describe(err)}` });
    } finally {
      setBusy(false);
    }
  };

  const save = async (overwrite = false) => {
    const loaded = g.loaded;
    if (loaded === undefined) return;
    const policy = g.current();
    setBusy(true);
    try {
      const etag = await put(itemPath(kind, name), policy, overwrite ? undefined : loaded.etag);
      g.setLoaded({ ...loaded, etag });
      g.setDirty(false);
      g.setIssues([]);
      setBanner({ kind: 'ok', text: `Saved '${name}'. It is live for the next request.` });
    } catch (err) {
      if (err instanceof ApiError && err.conflict) {
        setBanner({
          kind: 'conflict',
          text: `${noun} '${name}' was changed by someone else since you opened it, so your version was not saved.`,
        });
      } else if (err instanceof ApiError && err.status === 400) {
        const problems = err.details.length > 0 ? err.details : [{ path: '', message: err.message }];
        g.setIssues(locate(problems, policy.nodes));
        setBanner({
          kind: 'error',
          text: `Not saved: the gateway refused the ${noun.toLowerCase()} (${problems.length} problem(s), listed on the right). The running configuration is unchanged.`,
        });
      } else {
        setBanner({ kind: 'error', text: `Not saved: ${describe(err)}` });
      }
    } finally {
      setBusy(false);
    }
  };

  const reload = () => {
    setBanner(undefined);
    g.load().catch((err: unknown) => setBanner({ kind: 'error', text: describe(err) }));
  };

  return { banner, setBanner, busy, validate, save, reload };
}
