"""The op families. Each module adds its Graph methods; ``recurrent`` holds what they share."""
