// Runs before every request. Browser-side tRPC calls (mutations from client components, the
// start-task subscription) go to /trpc on this origin and are forwarded to the service with
// the browser's cookies and Origin; pages need a session, or send the browser to /signin.
import { NextResponse, type NextRequest } from 'next/server';
import { serviceUrl, SESSION_COOKIE } from './lib/config';

export function proxy(request: NextRequest) {
  const { pathname, search } = request.nextUrl;
  if (pathname === '/trpc' || pathname.startsWith('/trpc/')) {
    return NextResponse.rewrite(new URL(pathname + search, serviceUrl()));
  }
  if (!request.cookies.has(SESSION_COOKIE) && pathname !== '/signin') {
    const signin = new URL('/signin', request.url);
    signin.searchParams.set('next', pathname + search);
    return NextResponse.redirect(signin);
  }
  return NextResponse.next();
}

export const config = { matcher: ['/((?!_next/|favicon.ico).*)'] };
