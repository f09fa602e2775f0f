import { useState } from 'preact/hooks';
import { api, ok, type Schema } from '../api.ts';
import { currentUser, signOut } from '../auth.ts';
import { dateTime } from '../format.ts';
import { Field } from '../form.tsx';
import { href } from '../router.ts';
import { useSession } from '../session.ts';
import { Button, ErrorNotice, Loading, Notice, Page, Section, useAction, useLoad } from '../ui.tsx';

/** What each optional message is, as a person reads it (an unknown type shows its name). */
const MESSAGE_NAMES: Record<string, string> = {
  'low-balance': 'Low balance: the balance fell below your own threshold',
  'server-installed': 'Server installed: a server you deployed is ready',
};

/**
 * The customer's account: the e-mail mail goes to (and a change of it, confirmed from the new
 * address), this browser's sign-in, the API keys, and which optional e-mails are sent.
 * Routes: GET /v1/account, PUT /v1/account/email, GET/PUT /v1/account/mail-preferences.
 */
export default function AccountPage() {
  const { account } = useSession();
  return (
    <Page title="Account">
      <dl class="props" data-testid="account-facts">
        <dt>E-mail</dt>
        <dd data-testid="account-email">{account.email}</dd>
        <dt>Account since</dt>
        <dd>{dateTime(account.createdAt)}</dd>
        <dt>Account id</dt>
        <dd class="mono">{account.id}</dd>
      </dl>
      <EmailChange current={account.email} />
      <SignIn />
      <Section id="account-keys" title="API keys">
        <p>
          Scripts and tools use API keys instead of your sign-in. <a href={href('/keys')}>Manage your API keys</a>.
        </p>
      </Section>
      <MailPreferences />
    </Page>
  );
}

function EmailChange(props: { current: string }) {
  const [email, setEmail] = useState('');
  const [change, setChange] = useState<Schema<'EmailChange'> | null>(null);
  const save = useAction(async () => {
    setChange(await ok(api().PUT('/v1/account/email', { body: { email: email.trim() } })));
    setEmail('');
  });
  return (
    <Section id="account-email-change" title="Change e-mail">
      <p class="muted">
        Mail keeps going to {props.current} until you open the confirmation link sent to the new address. Sign-in does not change.
      </p>
      {change?.pendingEmail ? (
        <Notice kind="success">
          <span data-testid="email-pending">
            A confirmation link went to {change.pendingEmail}
            {change.tokenExpiresAt ? `; it works until ${dateTime(change.tokenExpiresAt)}` : ''}.
          </span>
        </Notice>
      ) : null}
      <form
        class="inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          void save.run();
        }}
      >
        <Field id="account-new-email" label="New e-mail address">
          {(control) => (
            <input
              {...control}
              type="email"
              autoComplete="email"
              maxLength={254}
              required
              value={email}
              onInput={(e) => setEmail(e.currentTarget.value)}
            />
          )}
        </Field>
        <Button type="submit" kind="primary" busy={save.busy} disabled={email.trim() === ''}>
          Send confirmation
        </Button>
      </form>
      <ErrorNotice error={save.error} onDismiss={save.clearError} />
    </Section>
  );
}

/** The only session the dashboard knows of is this browser's: the identity provider keeps the rest. */
function SignIn() {
  const user = currentUser();
  const expires = user?.expires_at ? new Date(user.expires_at * 1000).toISOString() : null;
  return (
    <Section id="account-session" title="Sign-in">
      <p data-testid="account-session">
        Signed in on this browser{expires ? `; the session renews or ends at ${dateTime(expires)}` : ''}. Your other sessions and your
        password are kept by the sign-in provider.
      </p>
      <Button onClick={() => void signOut()}>Sign out of this browser</Button>
    </Section>
  );
}

function MailPreferences() {
  const prefs = useLoad(() => ok(api().GET('/v1/account/mail-preferences')));
  const [saved, setSaved] = useState(false);
  // The box shows the click at once; the answer (or, on a refusal, the stored value) replaces it.
  const [shown, setShown] = useState<Record<string, boolean> | null>(null);
  const save = useAction(async (type: string, on: boolean, before: Record<string, boolean>) => {
    setSaved(false);
    setShown({ ...before, [type]: on });
    try {
      setShown((await ok(api().PUT('/v1/account/mail-preferences', { body: { preferences: { [type]: on } } }))).preferences);
      setSaved(true);
    } catch (error) {
      setShown(null);
      throw error;
    }
  });
  return (
    <Section id="account-mail" title="E-mail notifications">
      <Loading state={prefs} label="Loading your notification preferences…">
        {(data) => (
          <>
            <fieldset class="checks" data-testid="mail-preferences">
              <legend>Optional e-mails (each can be turned off)</legend>
              {Object.entries(shown ?? data.preferences).map(([type, on]) => (
                <label key={type} class="check">
                  <input
                    type="checkbox"
                    name={type}
                    checked={on}
                    disabled={save.busy}
                    onChange={(e) => void save.run(type, e.currentTarget.checked, shown ?? data.preferences)}
                  />{' '}
                  {MESSAGE_NAMES[type] ?? type}
                </label>
              ))}
            </fieldset>
            <p class="muted">
              Always sent: receipts and credit notes, warnings before a server stops, and security notices ({data.transactional.length}{' '}
              kinds).
            </p>
          </>
        )}
      </Loading>
      <p role="status">{saved ? 'Preferences saved.' : ''}</p>
      <ErrorNotice error={save.error} onDismiss={save.clearError} />
    </Section>
  );
}
