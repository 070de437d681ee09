import { createContext, useContext } from 'react';

/** Who the browser is logged in as (GET /api/whoami); a `viewer` reads and writes nothing. */
export interface Whoami {
  username: string;
  role: 'admin' | 'viewer';
}

export const RoleContext = createContext<Whoami | undefined>(undefined);

/** True while the role is unknown or `viewer`: editing controls stay off until the admin role is confirmed. */
export function useReadOnly(): boolean {
  const who = useContext(RoleContext);
  return who?.role !== 'admin';
}
