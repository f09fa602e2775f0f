import { useMemo, useState } from 'preact/hooks';
import { api, ok, type Schema } from '../api.ts';
import { dateTime } from '../format.ts';
import { Field } from '../form.tsx';
import { Button, ErrorNotice, Loading, Notice, useAction, useLoad, Section } from '../ui.tsx';
import { countryOptions } from './countries.ts';

type Profile = Schema<'BillingProfile'>;
type Update = Schema<'BillingProfileUpdate'>;
type Country = NonNullable<NonNullable<Update['address']>['country']>;

const FIELDS = [
  ['name', 'Name', 'name'],
  ['company', 'Company', 'organization'],
  ['line1', 'Address line 1', 'address-line1'],
  ['line2', 'Address line 2', 'address-line2'],
  ['postalCode', 'Postal code', 'postal-code'],
  ['city', 'City', 'address-level2'],
  ['region', 'State, province or county', 'address-level1'],
  ['country', 'Country', 'country'],
  ['vatId', 'VAT id', 'off'],
] as const;
type Key = (typeof FIELDS)[number][0];
type Values = Record<Key, string>;

const valuesOf = (p: Profile): Values => ({
  name: p.name ?? '',
  company: p.company ?? '',
  line1: p.address?.line1 ?? '',
  line2: p.address?.line2 ?? '',
  postalCode: p.address?.postalCode ?? '',
  city: p.address?.city ?? '',
  region: p.address?.region ?? '',
  country: p.address?.country ?? '',
  vatId: p.vatId ?? '',
});

/** The form as the PUT's body: the whole profile (an empty field is cleared; no address at all is null). */
function bodyOf(v: Values): Update {
  const opt = (s: string) => (s.trim() === '' ? null : s.trim());
  const address = {
    line1: opt(v.line1),
    line2: opt(v.line2),
    postalCode: opt(v.postalCode),
    city: opt(v.city),
    region: opt(v.region),
    country: (opt(v.country.toUpperCase()) ?? undefined) as Country | undefined,
  };
  const empty = Object.values(address).every((x) => x === null || x === undefined);
  return { name: opt(v.name), company: opt(v.company), address: empty ? null : address, vatId: opt(v.vatId) };
}

/** Who invoices are addressed to: printed as the buyer on every invoice PDF. */
export function BillingProfile() {
  const state = useLoad(() => ok(api().GET('/v1/account/billing-profile')));
  return (
    <Section id="profile" class="billing-section" title="Billing profile">
      <Loading state={state} label="Loading the billing profile…">
        {(profile) => <ProfileForm profile={profile} />}
      </Loading>
    </Section>
  );
}

function ProfileForm(props: { profile: Profile }) {
  const [profile, setProfile] = useState(props.profile);
  const [values, setValues] = useState<Values>(() => valuesOf(props.profile));
  const [saved, setSaved] = useState(false);
  const countries = useMemo(countryOptions, []);
  const save = useAction(async () => {
    const stored = await ok(api().PUT('/v1/account/billing-profile', { body: bodyOf(values) }));
    setProfile(stored);
    setValues(valuesOf(stored));
    setSaved(true);
  });
  return (
    <>
      <p class="muted">
        Printed as the buyer on your invoice PDFs, earlier ones included; without it they show your e-mail address.
        {profile.updatedAt ? ` Last changed ${dateTime(profile.updatedAt)}.` : ''}
      </p>
      {saved ? <Notice kind="success">Billing profile saved.</Notice> : null}
      <ErrorNotice error={save.error} onDismiss={save.clearError} />
      <form
        id="profile-form"
        class="billing-form profile-grid"
        onSubmit={(e) => {
          e.preventDefault();
          setSaved(false);
          void save.run();
        }}
      >
        {FIELDS.map(([key, label, autocomplete]) => (
          <Field
            key={key}
            id={`profile-${key}`}
            label={label}
            hint={key === 'vatId' ? `With its country prefix, like DE123456789.${vatCheckText(profile.vatCheck)}` : undefined}
          >
            {(control) =>
              key === 'country' ? (
                <select
                  {...control}
                  autoComplete="country"
                  value={values.country}
                  onChange={(e) => {
                    const value = e.currentTarget.value;
                    setValues((v) => ({ ...v, country: value }));
                  }}
                >
                  <option value="">Not set</option>
                  {countries.map((c) => (
                    <option key={c.code} value={c.code}>
                      {c.name}
                    </option>
                  ))}
                </select>
              ) : (
                <input
                  {...control}
                  type="text"
                  autoComplete={autocomplete}
                  maxLength={100}
                  value={values[key]}
                  onInput={(e) => {
                    const value = e.currentTarget.value;
                    setValues((v) => ({ ...v, [key]: value }));
                  }}
                />
              )
            }
          </Field>
        ))}
        <div class="actions profile-actions">
          <Button type="submit" kind="primary" busy={save.busy}>
            Save billing profile
          </Button>
        </div>
      </form>
    </>
  );
}

/** What VIES said of the saved VAT id: only a valid one earns the EU reverse charge. */
function vatCheckText(check: Profile['vatCheck']): string {
  if (!check) return '';
  const when = ` (checked with VIES ${dateTime(check.checkedAt)})`;
  if (check.valid === true) return ` Valid${when}.`;
  if (check.valid === false) return ` Not valid${when}: VAT is charged.`;
  return ` VIES could not check it${when}; it is checked again at your next top-up.`;
}
