import { ApiError, getJson, getVersioned, itemPath, type Kind, type Versioned } from '../api.js';

/**
 * The stored item `name` of `kind` with its ETag, or undefined when it does not exist yet (a New
 * policy). The list is read first, so an unsaved name never costs a 404 in the browser console.
 */
export async function storedOrNew<T>(kind: Kind, name: string): Promise<Versioned<T> | undefined> {
  const list = await getJson<{ name: string }[]>(`/api/${kind}`);
  if (!list.some((item) => item.name === name)) return undefined;
  return getVersioned<T>(itemPath(kind, name)).catch((err: unknown) => {
    if (err instanceof ApiError && err.status === 404) return undefined; // Deleted in between.
    throw err;
  });
}
