"""Which words of a quoted passage are printed in bold as the answer."""

from core.backends.local.answer_span import in_bold, is_number


def bold(text: str, question: str, quantity: bool = False) -> str:
    return in_bold(text.split(), question, quantity)


def test_a_number_is_bold_with_its_unit_and_punctuation_stays_outside():
    assert (
        bold("Maximum switching current: 16 A, peak 30 A.", "What is the switching current?")
        == "Maximum switching current: **16 A**, peak **30 A**."
    )
    assert bold("Size 62 × 27.5 × 9.5mm", "Wie groß ist es?", quantity=True) == "Size **62 × 27.5 × 9.5mm**"
    assert bold("32KB Flash 2KB SRAM", "How much flash?", quantity=True) == "**32KB** Flash **2KB** SRAM"


def test_a_model_code_answers_a_which_question_unless_the_question_names_it():
    assert (
        bold("MCU: ARM Cortex-M3 STM32F103RCT6 on the V2.0 board", "Which MCU does the V2.0 board use?")
        == "MCU: ARM Cortex-M3 **STM32F103RCT6** on the V2.0 board"
    )
    # a question of quantity wants the number, not the code beside it
    assert (
        bold("The TMC2209 drives up to 2 A", "How much current does it drive?", quantity=True)
        == "The TMC2209 drives up to **2 A**"
    )


def test_a_row_of_many_values_gets_no_bold():
    row = "PA0 PA1 PA2 PA3 PA4 PA5"
    assert bold(row, "Which pins are used?") == row


def test_a_version_or_a_code_is_no_number():
    assert not any(map(is_number, ["V2.0", "Mk4P", "3.For", "2."])) and all(
        map(is_number, ["85", "-40", "0,8", "16-bit"])
    )


def test_a_heading_number_is_no_answer():
    assert (
        bold("5.4 Board Outline & Mounting Holes", "How many mounting holes?", quantity=True)
        == "5.4 Board Outline & Mounting Holes"
    )
    assert bold("supply 3.3 V only", "Which supply voltage?") == "supply **3.3 V** only"
    assert (
        bold("a warranty of 24 months from delivery", "How long?", quantity=True)
        == "a warranty of **24 months** from delivery"
    )
