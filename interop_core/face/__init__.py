"""face"""
