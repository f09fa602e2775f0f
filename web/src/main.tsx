import { render } from 'preact';
import './styles.css';
import { completeSignIn, restoreSession, signIn } from './auth.ts';
import { loadConfig } from './config.ts';
import { appPath, interceptLinks, navigate } from './router.ts';

/**
 * Boot: read the configuration, finish a sign-in coming back from the identity provider (or restore
 * the session of this tab, or go and sign in), then render the app. The app's own code is a chunk of
 * its own, fetched while the session is checked.
 */
const root = document.getElementById('app')!;
const appModule = import('./app.tsx');

async function boot(): Promise<void> {
  await loadConfig();
  if (appPath() === '/callback') {
    navigate(await completeSignIn(), { replace: true });
  } else if (!(await restoreSession())) {
    await signIn();
    return;
  }
  interceptLinks();
  const { App } = await appModule;
  root.textContent = '';
  render(<App />, root);
}

boot().catch((error: unknown) => {
  root.innerHTML = '';
  const p = document.createElement('p');
  p.className = 'notice error';
  p.setAttribute('role', 'alert');
  p.textContent = `The dashboard could not start: ${error instanceof Error ? error.message : String(error)}`;
  const retry = document.createElement('a');
  retry.href = import.meta.env.BASE_URL;
  retry.textContent = 'Try again';
  root.append(p, retry);
});
