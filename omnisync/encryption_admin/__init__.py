"""What an operator runs on a store's encryption: encrypting a store in place
(:mod:`.migration`, ``omnisync encrypt``) and rotating the master key that wraps its data keys
(:mod:`.rotation`, ``omnisync keys rotate`` and ``retire``). They work on stores and run
state, so they sit above both; :mod:`omnisync.encryption` holds the primitives the stores use.
"""
