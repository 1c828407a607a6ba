"""What the tests share: fixtures' building blocks, fake servers, the store contract, and the
worker scripts that tests start as processes of their own."""
