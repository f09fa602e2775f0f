import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Schema } from './api.ts';

/** The signed-in account (GET /v1/account), shared by every page; `refresh` reads it again. */
export interface Session {
  account: Schema<'Account'>;
  refresh: () => Promise<void>;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside the signed-in app');
  return session;
}
