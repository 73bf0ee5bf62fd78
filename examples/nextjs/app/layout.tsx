import type { Metadata } from 'next';
import { cookies } from 'next/headers';
import Link from 'next/link';
import type { ReactNode } from 'react';
import { SESSION_COOKIE } from '@/lib/config';
import { signOut } from './signin/actions';
import './globals.css';

export const metadata: Metadata = { title: 'Agent control plane' };

export default async function RootLayout({ children }: { children: ReactNode }) {
  const signedIn = (await cookies()).has(SESSION_COOKIE);
  return (
    <html lang="en">
      <body>
        <header>
          {signedIn ? (
            <>
              <Link href="/conversations">Conversations</Link>
              <Link href="/sandboxes">Sandboxes</Link>
              <Link href="/settings">Settings</Link>
              <Link href="/git-providers">Git providers</Link>
              <Link href="/secrets">Secrets</Link>
              <form action={signOut}>
                <button type="submit">Sign out</button>
              </form>
            </>
          ) : (
            <span>Agent control plane</span>
          )}
        </header>
        <main>{children}</main>
      </body>
    </html>
  );
}
