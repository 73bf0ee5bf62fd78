import { SignInForm } from './signin-form';

export default async function SignInPage({ searchParams }: { searchParams: Promise<{ next?: string }> }) {
  const { next } = await searchParams;
  return (
    <section>
      <h1>Sign in</h1>
      <p className="hint">
        Use an API key of the service (npm run cli -- keys create --user you). It is sent to this server once and never stored in the
        browser.
      </p>
      <SignInForm next={next ?? '/'} />
    </section>
  );
}
