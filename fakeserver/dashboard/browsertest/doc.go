// Package browsertest drives the fakeserver's dashboard in headless
// Chromium (github.com/chromedp/chromedp). It is its own module so that
// chromedp and the Chrome DevTools Protocol types never reach the
// dependencies of programs that use the SDK or the fakeserver.
//
// The tests skip, saying how to install it, where Chromium is missing
// (apt-get install -y chromium); under CI they fail instead, and .ci/run
// installs it. CONFPAY_UPDATE_SCREENSHOTS=1 rewrites docs/images/dashboard-*.png.
package browsertest
