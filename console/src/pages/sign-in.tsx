import { useState } from 'preact/hooks';

export function SignIn({ onKey, error }: { onKey: (key: string) => void; error?: string }) {
  const [key, setKey] = useState('');
  return (
    <main id="main" class="sign-in">
      <h1>Tally console</h1>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (key.trim()) onKey(key.trim());
        }}
      >
        <label for="api-key">API key</label>
        <input id="api-key" type="password" autoComplete="off" placeholder="tk_live_…" value={key} onInput={(e) => setKey(e.currentTarget.value)} required />
        <button type="submit">Sign in</button>
        {error && (
          <p class="notice error" role="alert">
            {error}
          </p>
        )}
        <p class="muted">
          Use the <strong>admin</strong> key printed on first start (or one from <code>npm run admin -- issue-key</code>). It stays in this tab only
          (sessionStorage) and is sent as a Bearer token; the console sets no cookie. A key without some permission sees fewer pages.
        </p>
      </form>
    </main>
  );
}
